"""Issue 38, left last session: a witness's node certificate lasts 5 years too, and a witness holds
no CA key. It asks; an unlocked KMA signs; every node trusts the new certificate before the witness
moves to it; the witness keeps its vote throughout (kma/cluster/witness_renewal.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from kma.cluster.node_config import ClusterFiles
from kma.cluster.node_renewal import lets_in
from kma.cluster.witness_renewal import request_text
from kms_client import ClusterUnavailable, KmsError
from tests.support.cluster import BINARY, execute, files_of, first_node, replica
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

        # A request written into the store by someone without the witness's node key (a leaked node
        # credential) is refused, audited and removed: no certificate is signed for it
        name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "witness-1")])
        stranger = ec.generate_private_key(ec.SECP256R1())
        forged = x509.CertificateSigningRequestBuilder().subject_name(name).sign(stranger, hashes.SHA256())
        sql = "UPDATE kmas SET node_csr_pem = ? WHERE id = 'witness-1'"
        execute(first, [[sql, request_text(forged, stranger)]])
        refused = wait_until(
            lambda: [m for m in audited(first, "kma.node_certificate_renew") if "refused" in m],
            30,
            what="the forged request refused",
        )
        assert "not made with the witness's current node key" in refused[0], refused

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
        sites: list[int] = []

        def written() -> bool:
            try:
                so.create_site(f"renewed-{len(sites)}", "After the witness's renewal")
                sites.append(1)
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

        # And a witness whose certificate is due by its own settings asks by itself; killed (with its
        # rqlited) once it has asked, it finishes the renewal when it runs again
        config = witness.data_dir / "kma.toml"
        settings = config.read_text(encoding="utf-8")
        config.write_text(settings + '\n[certificates]\nkma_validity = "30y"\nrenew_before = "10y"\n')
        witness.stop()
        witness.start()

        def asked_by_itself() -> bool:
            with replica(first) as db:
                try:
                    row = db.execute("SELECT node_csr_pem FROM kmas WHERE id = 'witness-1'").fetchone()
                except sqlite3.Error:
                    return False
            return row is not None and row[0] is not None

        wait_until(asked_by_itself, 60, what="the witness's own request")
        witness.kill()
        config.write_text(settings)  # due no more: the renewal under way is finished, no new one begun
        second_cert, second_key = tmp_path / "second.crt", tmp_path / "second.key"
        second_cert.write_bytes(files.node_cert.read_bytes())
        second_key.write_bytes(files.node_key.read_bytes())
        second_key.chmod(0o600)
        witness.start()
        wait_until(
            lambda: files.node_cert.read_bytes() != second_cert.read_bytes(), 120, what="the second switch"
        )
        wait_until(lambda: not lets_in(first_raft, second_cert, second_key), 120, what="the second refused")
        wait_until(lambda: lets_in(first_raft, files.node_cert, files.node_key), 120, what="the third let in")
        wait_until(written, 90, what="a write with the witness's vote again", interval=0.5)
        renewals = audited(first, "kma.node_certificate_renew")
        assert len([m for m in renewals if "signed witness" in m]) == 2, renewals
        assert len([m for m in renewals if "refused" in m]) == 1, renewals  # the forged one only
        assert len([m for m in renewals if "renewed witness" in m]) == 2, renewals
    finally:
        if witness is not None:
            witness.stop()
        first.stop()
