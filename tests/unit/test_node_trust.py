"""Which node certificates a cluster node's rqlited is to trust, read from its replica
(kma/cluster/trust.py): the admitted KMAs' pins, or nothing to change while one is unknown."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kma.cluster.node_config import ClusterFiles
from kma.cluster.trust import bundle, wanted

OWN = "-----BEGIN CERTIFICATE-----\nown\n-----END CERTIFICATE-----\n"
OTHER = "-----BEGIN CERTIFICATE-----\nother\n-----END CERTIFICATE-----\n"


def node_with(tmp_path: Path, rows: list[tuple[str, str | None, int | None, int]]) -> ClusterFiles:
    """A node's cluster/ folder whose replica holds these kmas rows (id, pin, removed_at, awaiting)."""
    files = ClusterFiles(tmp_path / "cluster")
    files.rqlite_dir.mkdir(parents=True)
    files.node_cert.write_text(OWN, encoding="ascii")
    with sqlite3.connect(files.replica) as db:
        db.execute(
            "CREATE TABLE kmas (id TEXT PRIMARY KEY, node_cert_pem TEXT, removed_at INTEGER, "
            "awaiting_join INTEGER)"
        )
        db.executemany("INSERT INTO kmas VALUES (?, ?, ?, ?)", rows)
    return files


def test_the_admitted_kmas_node_certificates_are_trusted_and_removed_or_awaiting_ones_not(
    tmp_path: Path,
) -> None:
    files = node_with(
        tmp_path,
        [
            ("kma-1", OWN, None, 0),
            ("kma-2", OTHER, None, 0),
            ("kma-3", OTHER, 1700000000, 0),
            ("kma-4", None, None, 1),
        ],
    )
    assert wanted(files, "kma-1") == {"kma-1": OWN, "kma-2": OTHER}
    assert bundle({"kma-2": OTHER, "kma-1": OWN}) == (OWN + OTHER).encode()  # by KMA ID, whatever order


def test_a_cluster_made_before_node_pins_keeps_its_trust_until_every_kma_has_one(tmp_path: Path) -> None:
    files = node_with(tmp_path, [("kma-1", OWN, None, 0), ("kma-2", None, None, 0)])
    assert wanted(files, "kma-1") is None


def test_a_removed_kma_or_another_certificate_never_pins_itself_in(tmp_path: Path) -> None:
    removed = node_with(tmp_path / "a", [("kma-1", OWN, 1700000000, 0), ("kma-2", OTHER, None, 0)])
    assert wanted(removed, "kma-1") is None
    replaced = node_with(tmp_path / "b", [("kma-1", OTHER, None, 0)])  # the entry names another machine
    assert wanted(replaced, "kma-1") is None


def test_a_node_without_a_replica_yet_keeps_what_its_join_wrote(tmp_path: Path) -> None:
    files = ClusterFiles(tmp_path / "cluster")
    files.folder.mkdir()
    files.node_cert.write_text(OWN, encoding="ascii")
    assert wanted(files, "kma-1") is None
