"""Which node certificates a cluster node's rqlited is to trust, read from its replica
(kma/cluster/trust.py): the admitted KMAs' pins, or nothing to change while one is unknown."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kma.cluster.node_config import ClusterFiles
from kma.cluster.trust import bundle, wanted
from kma.crypto import entry_signature
from kma.crypto.ca import create_cluster_ca

OWN = "-----BEGIN CERTIFICATE-----\nown\n-----END CERTIFICATE-----\n"
OTHER = "-----BEGIN CERTIFICATE-----\nother\n-----END CERTIFICATE-----\n"
CA = create_cluster_ca("test cluster")
SIGN = object()  # a row's signature: made with the cluster CA


def node_with(
    tmp_path: Path, rows: list[tuple[str, str | None, int | None, int]], signature: object = SIGN
) -> ClusterFiles:
    """A node's cluster/ folder whose replica holds these kmas rows (id, pin, removed_at, awaiting),
    each signed by the cluster CA (or with `signature` as given)."""
    files = ClusterFiles(tmp_path / "cluster")
    files.rqlite_dir.mkdir(parents=True)
    files.node_cert.write_text(OWN, encoding="ascii")
    files.ca_cert.write_bytes(CA.cert_pem)
    with sqlite3.connect(files.replica) as db:
        db.execute(
            "CREATE TABLE kmas (id TEXT PRIMARY KEY, node_cert_pem TEXT, removed_at INTEGER, "
            "awaiting_join INTEGER, witness INTEGER DEFAULT 0, service_address TEXT DEFAULT '', "
            "raft_address TEXT DEFAULT '', join_passphrase_hash TEXT, signature TEXT)"
        )
        for kma_id, pin, removed_at, awaiting in rows:
            row = {
                "id": kma_id,
                "witness": 0,
                "awaiting_join": awaiting,
                "removed_at": removed_at,
                "service_address": "",
                "raft_address": "",
                "node_cert_pem": pin,
                "join_passphrase_hash": None,
            }
            signed = entry_signature.sign(CA.key_pem, row) if signature is SIGN else signature
            db.execute(
                "INSERT INTO kmas (id, node_cert_pem, removed_at, awaiting_join, signature) "
                "VALUES (?, ?, ?, ?, ?)",
                (kma_id, pin, removed_at, awaiting, signed),
            )
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


def test_a_kma_entry_written_into_the_store_pins_nothing(tmp_path: Path) -> None:
    files = node_with(tmp_path, [("kma-1", OWN, None, 0), ("kma-2", OTHER, None, 0)])
    assert wanted(files, "kma-1") == {"kma-1": OWN, "kma-2": OTHER}
    assert entry_signature.marker(tmp_path).exists()  # every entry seen signed: none may lack one now
    with sqlite3.connect(files.replica) as db:
        db.execute(
            "INSERT INTO kmas (id, node_cert_pem, removed_at, awaiting_join) VALUES ('m', 'forged', NULL, 0)"
        )
        db.execute("UPDATE kmas SET removed_at = NULL, node_cert_pem = 'mine' WHERE id = 'kma-2'")  # altered
    assert wanted(files, "kma-1") == {"kma-1": OWN}


def test_entries_from_before_signatures_are_trusted_until_every_entry_is_signed(tmp_path: Path) -> None:
    files = node_with(tmp_path, [("kma-1", OWN, None, 0), ("kma-2", OTHER, None, 0)], signature=None)
    assert wanted(files, "kma-1") == {"kma-1": OWN, "kma-2": OTHER}
    assert not entry_signature.marker(tmp_path).exists()
    wrong = node_with(tmp_path / "b", [("kma-1", OWN, None, 0), ("kma-2", OTHER, None, 0)], signature="AAAA")
    assert wanted(wrong, "kma-1") is None  # its own entry does not verify: it keeps what it has


def test_a_removed_kma_written_back_with_its_older_signature_stays_removed(tmp_path: Path) -> None:
    before = node_with(tmp_path / "before", [("kma-1", OWN, None, 0), ("kma-2", OTHER, None, 0)])
    with sqlite3.connect(before.replica) as db:
        old_signature = db.execute("SELECT signature FROM kmas WHERE id = 'kma-2'").fetchone()[0]
    files = node_with(tmp_path, [("kma-1", OWN, None, 0), ("kma-2", OTHER, 1700000000, 0)])
    assert wanted(files, "kma-1") == {"kma-1": OWN}  # this node sees the removal
    with sqlite3.connect(files.replica) as db:  # then someone writes back the entry as it was
        db.execute("UPDATE kmas SET removed_at = NULL, signature = ? WHERE id = 'kma-2'", (old_signature,))
    assert wanted(files, "kma-1") == {"kma-1": OWN}
