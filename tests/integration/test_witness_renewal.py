"""Issue 38, left last session: a witness's node certificate lasts 5 years too, and a witness holds
no CA key. It asks; an unlocked KMA signs; every node trusts the new certificate before the witness
moves to it; the witness keeps its vote throughout (kma/cluster/witness_renewal.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kma.cluster.node_config import ClusterFiles
from kma.cluster.node_renewal import lets_in
from kms_client import ClusterUnavailable, KmsError
from tests.support.cluster import BINARY, files_of, first_node, replica
from tests.support.waiting import wait_until
from tests.support.witness import RunningWitness, add_witness

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")


def audited(first: object, operation: str) -> list[str]:
    with replica(first) as db:  # type: ignore[arg-type]
        try:
            rows = db.execute(
                "SELECT message FROM audit_events WHERE operation = ? AND subject_id = 'witness-1' "
                "ORDER BY id",
                (operation,),
            ).fetchall()
        except sqlite3.Error:  # its replica rebuilt by rqlited at a restart
            return []
    return [r[0] for r in rows]


def test_a_witness_renews_its_node_certificate_through_a_kma_and_keeps_its_vote(tmp_path: Path) -> None:
    first, _ = first_node(tmp_path / "a")
    witness: RunningWitness | None = None
    try:
        witness = add_witness(first, tmp_path)
        files = ClusterFiles.of(witness.data_dir)
        old_cert, old_key = tmp_path / "old.crt", tmp_path / "old.key"
        old_cert.write_bytes(files.node_cert.read_bytes())
        old_key.write_bytes(files.node_key.read_bytes())
        old_key.chmod(0o600)
        first_raft = files_of(first).load().raft_address
        so = first.client("so")

        def shown() -> object:
            return next(k for k in so.get_topology().kmas if k.id == "witness-1").node_certificate_expires_at

        before = shown()
        assert before is not None  # the join recorded the first one

        # When a Security Officer asks for a new one (the witness holds no CA key: a KMA signs)
        so.renew_kma_certificate("witness-1")

        # Then the witness moves to it once the KMA's node lets it in, and the old one is refused
        # once the entry pins the new one alone
        wait_until(lambda: files.node_cert.read_bytes() != old_cert.read_bytes(), 120, what="the switch")
        assert not files.node_cert.with_name("node.next.key").exists()
        wait_until(
            lambda: lets_in(first_raft, files.node_cert, files.node_key), 120, what="the new one let in"
        )
        wait_until(lambda: not lets_in(first_raft, old_cert, old_key), 120, what="the old one refused")

        # And the cluster of two voters takes writes again (the witness's vote is needed for each)
        def written() -> bool:
            try:
                so.create_site("renewed", "After the witness's renewal")
            except (ClusterUnavailable, KmsError):
                return False
            return True

        wait_until(written, 90, what="a write with the witness's vote", interval=0.5)
        wait_until(lambda: shown() != before, 30, what="the new expiry on the Cluster page")
        signed = audited(first, "kma.node_certificate_renew")
        assert any("signed witness witness-1's request" in m for m in signed), signed
        assert any("renewed witness witness-1's node certificate" in m for m in signed), signed
        asked = audited(first, "kma.certificate_renew_request")
        assert asked == ["asked witness 'witness-1' to renew its node certificate now"], asked

        # And a witness whose certificate is due by its own settings asks by itself
        config = witness.data_dir / "kma.toml"
        config.write_text(
            config.read_text(encoding="utf-8")
            + '\n[certificates]\nkma_validity = "30y"\nrenew_before = "10y"\n',
            encoding="utf-8",
        )
        witness.stop()
        witness.start()
        wait_until(
            lambda: (
                len([m for m in audited(first, "kma.node_certificate_renew") if "signed witness" in m]) == 2
            ),
            90,
            what="the witness's own request signed",
        )
    finally:
        if witness is not None:
            witness.stop()
        first.stop()
