"""The cluster CA rolls over on a real KMA, judged by real TLS handshakes on the real clock (issue 38):
a quorum renews the CA's certificate, the KMA re-issues its own under it and then renews it by
itself before it ends; drives enrolled under the old certificate keep reading keys through and
after the rollover, a drive that renews takes the new CA, and managers that pinned the old one
still sign in, also once it has expired."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from kma.kmip.client import KmipFailure
from kms_client import KmsClient, Trust
from tests.integration.test_backups import cli
from tests.integration.test_certificate_lifecycle import (
    a_drive_with_a_key,
    keep_reading,
    presented_serial,
    write_settings,
)
from tests.integration.test_quorum import creds
from tests.support.agents import events, kmip, service_address
from tests.support.cluster import add_node, first_node, replica
from tests.support.kma_process import RunningKma, run_kma
from tests.support.waiting import wait_until

# A renewed CA certificate lasts 80 s here and is renewed 50 s before its end; a KMA's own
# certificates end with the CA's (capped) and are renewed 20 s before.
SHORT_CA = {
    "ca_validity": "80s",
    "ca_renew_before": "50s",
    "kma_validity": "5y",
    "renew_before": "20s",
    "agent_validity": "10y",
}

pytestmark = pytest.mark.slow  # the real clock: certificates expire inside the test


def ca_end(pem: str) -> float:
    return x509.load_pem_x509_certificate(pem.encode("ascii")).not_valid_after_utc.timestamp()


def served_other_than(kma: RunningKma, pem: str) -> str | None:
    served = Trust.fetch(kma.address).ca_pem
    return served if served != pem else None


def reads(drive_dir: Path, key_id: str) -> bytes:
    client = kmip(drive_dir)
    try:
        return client.get(key_id)
    finally:
        client.close()


def test_the_cluster_ca_rolls_over_while_drives_and_managers_that_trust_the_old_one_keep_working(
    tmp_path: Path,
) -> None:
    kma = RunningKma.demo_in(tmp_path, test_clock=False)
    try:
        write_settings(kma, **SHORT_CA)
        first_ca = kma.ca_pem  # what the drives and managers below trust: the demo's 20-year CA
        so = kma.client("so")
        old_drive, key_id, material = a_drive_with_a_key(kma, tmp_path, "lto4-dal-01", "E38101")
        service = service_address(kma)
        listener_before = presented_serial(service, first_ca)

        # When a quorum renews the CA certificate while a drive keeps reading its key
        with keep_reading(old_drive, key_id) as (read, failures):
            op = so.renew_cluster_ca(credentials=creds(kma, "alice", "bob", "carol"))
            assert op.state == "executed"
            second = wait_until(lambda: served_other_than(kma, first_ca), 30, what="the renewed CA served")
            # Then the KMA re-issues its listener certificate under it (a real handshake shows it)
            wait_until(
                lambda: presented_serial(service, first_ca) != listener_before, 30, what="the re-issue"
            )
        # A drive enrolled under the renewed (80 s) certificate, and one that will never renew
        write_settings(kma, **SHORT_CA | {"ca_validity": "1h"})  # the automatic renewal's validity
        renewing, renewing_key, renewing_material = a_drive_with_a_key(kma, tmp_path, "t10k-dal-01", "E38102")
        stale, stale_key, _ = a_drive_with_a_key(kma, tmp_path, "t10k-dal-02", "E38103")
        assert (renewing / "ca.pem").read_text() == second  # (30 s before the cluster renews it again)

        assert not failures, failures[:3]
        assert read and all(r == material for r in read)
        assert Trust.fetch(kma.address).previous == (first_ca,)
        [renewed] = [e for e in events(kma, 0, "quorum.execute") if e["subject_id"] == "ca"]
        assert "renewed the cluster CA certificate (a quorum decided" in renewed["message"]
        board = so.get_dashboard()
        [ca_row] = [c for c in board.certificates if c.kind == "ca"]
        assert abs(ca_row.expires_at.timestamp() - ca_end(second)) < 2

        # A manager that saved the old certificate is told of the renewal, to save it
        assert (told := so.ca_renewal()) is not None and told.ca_pem != first_ca
        # A manager holding only the old pin signs in and is handed the renewal to save
        pinned_only = KmsClient(kma.address, ca_fingerprint=kma.fingerprint)
        assert (found := pinned_only.ca_renewal()) is not None and found.ca_pem != first_ca
        pinned_only.sign_in("so", kma.passphrases["so"])
        pinned_only.close()
        # When the cluster renews the CA by itself before the 80 s one ends
        [automatic] = wait_until(lambda: events(kma, 0, "cluster.ca_renew"), 60, what="the automatic renewal")
        assert (
            automatic["entity_id"] == so.get_status().kma_id and "before it expires" in automatic["message"]
        )
        third = Trust.fetch(kma.address).ca_pem
        assert ca_end(third) > ca_end(second) + 1800

        # Then the renewing drive takes the new CA as it renews its certificate
        done = run_kma("agent", "renew", "--agent-dir", str(renewing))
        assert done.returncode == 0, done.stderr
        assert (renewing / "ca.pem").read_text() == third
        assert (
            json.loads((renewing / "agent.json").read_text())["ca_fingerprint"]
            == Trust.from_pem(third).fingerprint
        )

        # And once the 80 s certificate has expired (real clock), the KMA has retired it
        wait_until(
            lambda: second not in (kma.data_dir / "tls" / "ca.pem").read_text(),
            90,
            what="the retirement",
            interval=1,
        )
        # The first drive (its 20-year CA certificate, the same key) and the renewed one read keys
        assert reads(old_drive, key_id) == material
        assert reads(renewing, renewing_key) == renewing_material

        # The drive that never renewed held a certificate and a CA that ended with the 80 s one: refused
        def refused() -> bool:
            try:
                reads(stale, stale_key)
            except (ssl.SSLError, OSError, ConnectionError, KmipFailure):
                return True
            return False

        assert refused()
        # A manager that saved the expired certificate signs in on its renewal
        saved = KmsClient(kma.address, ca_pem=second, ca_fingerprint=Trust.from_pem(second).fingerprint)
        assert (found := saved.ca_renewal()) is not None and found.ca_pem == third
        saved.sign_in("so", kma.passphrases["so"])
        saved.close()
        # A Security Officer's `kma cluster renew-ca` submits it for the key split members' approval
        said = cli(kma, "so", "cluster", "renew-ca").stdout
        assert "submitted as quorum operation" in said and "kma quorum approve" in said
        pending = so.list_quorum_operations(state="pending").items
        assert [o.type for o in pending] == ["renew_cluster_ca"]
        # And the audit chain still verifies under the renewed certificate
        verified = run_kma("audit", "verify", "--data-dir", str(kma.data_dir), check=False)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        kma.stop()


def test_on_a_cluster_every_kma_follows_the_renewed_ca_while_a_drive_of_the_second_keeps_reading(
    tmp_path: Path,
) -> None:
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    try:
        for kma in (first, second):
            write_settings(kma, kma_validity="5y", renew_before="180d")  # looked at every second
        second.start()
        drive_dir, key_id, material = a_drive_with_a_key(second, tmp_path, "lto4-dal-01", "E38201")
        service = service_address(second)
        before = presented_serial(service, first.ca_pem)

        # When a quorum renews the CA certificate through the first KMA
        with keep_reading(drive_dir, key_id) as (read, failures):
            op = first.client("so").renew_cluster_ca(credentials=creds(first, "alice", "bob", "carol"))
            assert op.state == "executed"
            # Then the second KMA serves it too and re-issues its listener certificate under it
            renewed = wait_until(
                lambda: served_other_than(second, first.ca_pem), 60, what="the second follows"
            )
            wait_until(lambda: presented_serial(service, renewed) != before, 60, what="its re-issue")
        assert not failures, failures[:3]
        assert read and all(r == material for r in read)
        assert served_other_than(first, first.ca_pem) == renewed
        with replica(first) as db:
            sql = (
                "SELECT message FROM audit_events WHERE operation = 'kma.certificate_renew' AND entity_id = ?"
            )
            said = [r[0] for r in db.execute(sql, ("kma-dal-2",))]
        assert any("the cluster CA certificate was renewed" in m for m in said)
        # A manager that pinned the old certificate signs in through the second KMA and learns it
        client = second.client("so")
        assert (found := client.ca_renewal()) is not None and found.ca_pem == renewed
    finally:
        second.stop()
        first.stop()
