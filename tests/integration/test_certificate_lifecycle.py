"""Certificates expire and renew on a real KMA, judged by real TLS handshakes on the real clock
(issue 38): short validities from kma.toml [certificates], expiry shown on the dashboard, in
`kma status` and /metrics, a warning audited once, a KMA's listener certificate renewed in place
while a drive keeps reading its keys, and agents renewing their own over mutual TLS."""

from __future__ import annotations

import socket
import sqlite3
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kma.cluster.node_renewal import lets_in
from kma.kmip.client import KmipFailure
from kma.kmip.messages import BUSY
from kms_client import ClusterUnavailable, NotFound, Unauthenticated
from tests.integration.test_metrics import samples, scrape, value
from tests.support.agents import enroll, events, kmip, last_event, new_passphrase, service_address
from tests.support.cluster import add_node, files_of, first_node, replica
from tests.support.kma_process import RunningKma, run_kma
from tests.support.waiting import wait_until

# The demo's listener certificate (5 years) is inside the first warning; agents' last 40 s.
SETTINGS = {
    "agent_validity": "40s",
    "kma_validity": "40s",  # what a renewal issues: the KMA then renews it again 10 s later
    "renew_before": "30s",
    "warn_before": ["2000d", "30d"],
    "check_every": "1s",
}


def write_settings(kma: RunningKma, **changes: object) -> None:
    """kma.toml's [certificates] (read at each use: no restart needed)."""
    config = kma.data_dir / "kma.toml"
    text = config.read_text(encoding="utf-8").split("\n[certificates]\n")[0]
    lines = "".join(f"{name} = {_toml(v)}\n" for name, v in {**SETTINGS, **changes}.items())
    config.write_text(f"{text}\n[certificates]\n{lines}", encoding="utf-8")


def _toml(v: object) -> str:
    return "[" + ", ".join(f'"{x}"' for x in v) + "]" if isinstance(v, list) else f'"{v}"'


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("certs"), test_clock=False)
    write_settings(kma, kma_validity="5y", renew_before="180d")  # no renewal until a test asks
    kma.restart()
    yield kma
    kma.stop()


def presented_serial(address: str, ca_pem: str) -> int:
    """The serial of the certificate a listener presents in a real handshake."""
    context = ssl.create_default_context(cadata=ca_pem)
    context.check_hostname = False
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw, context.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    from cryptography import x509

    return int(x509.load_der_x509_certificate(der).serial_number)


def test_expiry_is_shown_everywhere_and_a_warning_is_audited_once(kma: RunningKma, tmp_path: Path) -> None:
    so = kma.client("so")
    board = so.get_dashboard()
    kinds = {(c.kind, c.owner): c for c in board.certificates}
    kma_id = so.get_status().kma_id
    assert kinds[("ca", board.cluster_name)].warning is False  # 20 years: beyond 2000 days
    listener = kinds[("listener", kma_id)]
    assert listener.warning and not listener.expired and listener.seconds_left > 1800 * 86400
    assert any(f"KMA {kma_id}'s listener certificate expires in" in w for w in board.warnings)
    assert so.get_kma(kma_id).certificate_expires_at == listener.expires_at

    wait_until(lambda: events(kma, 0, "certificate.expiry_warning"), 20, what="the warning's audit event")

    # An agent enrolled now holds a 40-second certificate: the Agents filter and /metrics see it
    enroll(kma, "t10k-dal-02", tmp_path / "drive", new_passphrase(kma, "t10k-dal-02"))
    op = kma.client("op")
    assert [a.id for a in op.list_agents(expires_within_days=1).items] == ["t10k-dal-02"]
    assert op.list_agents(expires_within_days=0).items == []  # not expired yet
    metrics = samples(scrape(kma, so.token).text)
    assert 0 < value(metrics, "kma_certificate_expiry_seconds", kind="agent", owner="") <= 40
    assert value(metrics, "kma_certificate_expiry_seconds", kind="listener", owner=kma_id) > 1800 * 86400
    assert value(metrics, "kma_agent_certificates_expiring") >= 1
    agent_warned = wait_until(
        lambda: [e for e in events(kma, 0, "certificate.expiry_warning") if e["subject_id"] == "t10k-dal-02"],
        20,
        what="the agent certificate's warning",
    )
    assert len(agent_warned) == 1
    # The listener's warning started once: one audit event, however many rounds the watch made since
    warned = [e for e in events(kma, 0, "certificate.expiry_warning") if e["subject_id"] == kma_id]
    assert len(warned) == 1 and warned[0]["condition"] == "warning"

    status = run_kma("status", "--data-dir", str(kma.data_dir)).stdout
    assert f"Certificate listener {kma_id}" in status and "Certificate agent    t10k-dal-02" in status


def test_an_agent_renews_over_mutual_tls_and_an_expired_certificate_is_refused_by_tls(
    kma: RunningKma, tmp_path: Path
) -> None:
    drive_dir = tmp_path / "renewing"
    enroll(kma, "t10k-dal-01", drive_dir, new_passphrase(kma, "t10k-dal-01"))
    drive = kmip(drive_dir)  # a connection opened with the first certificate
    key_id, _ = drive.write_key("E38001")
    first = (drive_dir / "agent.pem").read_text()

    # When the agent renews by itself (40 s certificate: due at once), with no passphrase
    mark = last_event(kma)
    renewed = run_kma("agent", "renew", "--agent-dir", str(drive_dir))
    assert renewed.returncode == 0, renewed.stderr
    assert (drive_dir / "agent.pem").read_text() != first
    assert [e["subject_id"] for e in events(kma, mark, "agent.renew")] == ["t10k-dal-01"]

    # Then a new connection presents the new certificate and reads the same key; the open one too
    fresh = kmip(drive_dir)
    try:
        assert fresh.get(key_id) == drive.get(key_id)
    finally:
        fresh.close()
        drive.close()

    # A certificate left to expire is refused by the TLS handshake itself, on the real clock
    write_settings(kma, kma_validity="5y", renew_before="180d", agent_validity="3s")
    try:
        lapsing = tmp_path / "lapsing"
        enroll(kma, "t10k-bos-01", lapsing, new_passphrase(kma, "t10k-bos-01"))
    finally:
        write_settings(kma, kma_validity="5y", renew_before="180d")

    def refused() -> bool:  # with TLS 1.3 the client learns it at its first request
        try:
            client = kmip(lapsing)
            try:
                client.write_key("E38003")
            finally:
                client.close()
        except (ssl.SSLError, OSError, ConnectionError):  # the KMA's TLS alert: certificate expired
            return True
        return False

    wait_until(refused, 30, what="the expired certificate's refusal", interval=0.5)
    expired = wait_until(
        lambda: [
            e
            for e in events(kma, 0, "certificate.expiry_warning")
            if e["subject_id"] == "t10k-bos-01" and e["condition"] == "error"
        ],
        20,
        what="the expired certificate's audit event",
    )
    assert "expired on" in expired[0]["message"]
    # And it cannot renew: TLS refuses it before any request
    stale = run_kma("agent", "renew", "--agent-dir", str(lapsing), "--now", check=False)
    assert stale.returncode == 2


@contextmanager
def keep_reading(
    drive_dir: Path, key_id: str, dropped_ok: bool = False
) -> Iterator[tuple[list[bytes], list[BaseException]]]:
    """A drive mounting one tape again and again, a new connection each time, while the block runs:
    the keys it read and what failed. A KMA that says it is busy (try another KMA, as a drive does)
    has refused nothing: the drive asks again; so has one that closed the connection while its
    rqlited restarted (`dropped_ok`: a drive connects again, `kma agent simulate` to the next KMA)."""
    reads: list[bytes] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def reading() -> None:
        while not stop.is_set():
            try:
                client = kmip(drive_dir)
                try:
                    reads.append(client.get(key_id))
                finally:
                    client.close()
            except KmipFailure as exc:
                if not exc.message.startswith(BUSY):
                    failures.append(exc)
            except ConnectionError as exc:
                if not dropped_ok:
                    failures.append(exc)
            except BaseException as exc:  # noqa: BLE001  # reported by the test
                failures.append(exc)

    reader = threading.Thread(target=reading, daemon=True)
    reader.start()
    try:
        yield reads, failures
        count = len(reads)
        wait_until(lambda: len(reads) > count + 3, 30, what="more reads after the renewal")
    finally:
        stop.set()
        reader.join(timeout=20)


def a_drive_with_a_key(
    kma: RunningKma, tmp_path: Path, agent_id: str, volser: str
) -> tuple[Path, str, bytes]:
    drive_dir = tmp_path / agent_id
    enroll(kma, agent_id, drive_dir, new_passphrase(kma, agent_id))
    setup = kmip(drive_dir)
    try:
        key_id, _ = setup.write_key(volser)
        return drive_dir, key_id, setup.get(key_id)
    finally:
        setup.close()


def test_a_kma_renews_its_listener_certificate_while_a_drive_keeps_reading_keys(
    kma: RunningKma, tmp_path: Path
) -> None:
    so = kma.client("so")
    kma_id = so.get_status().kma_id
    service = service_address(kma)
    before = presented_serial(service, kma.ca_pem)
    drive_dir, key_id, material = a_drive_with_a_key(kma, tmp_path, "lto4-dal-01", "E38002")
    try:
        with keep_reading(drive_dir, key_id) as (reads, failures):
            # When a Security Officer renews it with `kma cluster renew-certificate` (40 s ones from now on)
            write_settings(kma)
            secret = tmp_path / "so.passphrase"
            secret.write_text(kma.passphrases["so"] + "\n")
            said = run_kma(
                "cluster",
                "renew-certificate",
                kma_id,
                "--kma",
                kma.address,
                "--data-dir",
                str(kma.data_dir),
                "--user",
                "so",
                "--passphrase-file",
                str(secret),
            ).stdout
            assert f"KMA {kma_id}'s listener certificate renewed: valid until" in said
            after = presented_serial(service, kma.ca_pem)
            assert after != before
            assert presented_serial(kma.address, kma.ca_pem) == after  # both listeners
            # Then the KMA renews it by itself before it expires, and again
            wait_until(
                lambda: presented_serial(service, kma.ca_pem) not in (before, after),
                40,
                what="the KMA's own renewal",
                interval=0.5,
            )
    finally:
        write_settings(kma, kma_validity="5y", renew_before="180d")
    assert not failures, failures[:3]
    assert reads and all(r == material for r in reads)
    messages = [e["message"] for e in events(kma, 0, "kma.certificate_renew")]
    assert any("so asked for it" in m for m in messages)
    assert any("before it expires" in m for m in messages)


def test_passphrases_for_several_agents_are_all_or_nothing_and_each_in_its_agents_history(
    kma: RunningKma,
) -> None:
    op = kma.client("op")
    mark = last_event(kma)
    with pytest.raises(NotFound, match="no-such-drive"):
        op.new_enrollment_passphrases(["9840d-bos-01", "no-such-drive"])
    assert events(kma, mark, "agent.enrollment_passphrase") == []

    made = op.new_enrollment_passphrases(["9840d-bos-01", "t10k-dal-02"])
    assert [p.agent_id for p in made] == ["9840d-bos-01", "t10k-dal-02"]
    assert len({p.passphrase for p in made}) == 2
    audited = events(kma, mark, "agent.enrollment_passphrase")
    assert [(e["subject_type"], e["subject_id"]) for e in audited] == [
        ("agent", "9840d-bos-01"),
        ("agent", "t10k-dal-02"),
    ]


def test_on_a_cluster_each_kma_shows_its_certificates_and_renews_when_asked_through_another(
    tmp_path: Path,
) -> None:
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    try:
        second.start()
        so = first.client("so")
        shown = {k.id: k for k in so.get_topology().kmas}
        assert shown["kma-dal-2"].certificate_expires_at is not None
        assert shown["kma-dal-2"].node_certificate_expires_at is not None
        kinds = {(c.kind, c.owner) for c in so.get_dashboard().certificates}
        assert {("listener", "kma-dal-2"), ("node", "kma-dal-2"), ("node", "kma-dal-1")} <= kinds
        before = presented_serial(service_address(second), ca.cert_pem.decode())

        # When a Security Officer connected to the first KMA renews the second's certificate
        asked = so.renew_kma_certificate("kma-dal-2")
        assert asked.id == "kma-dal-2"

        # Then the second KMA renews it itself (it holds the key), and the request is cleared
        wait_until(
            lambda: presented_serial(service_address(second), ca.cert_pem.decode()) != before,
            30,
            what="the second KMA's renewal",
            interval=0.2,
        )
        wait_until(
            lambda: not so.get_kma("kma-dal-2").certificate_renewal_requested, 30, what="the request cleared"
        )

        def audited(operation: str) -> list[tuple[str, str]]:
            with replica(first) as db:
                sql = "SELECT entity_id, message FROM audit_events WHERE operation = ? ORDER BY id"
                return [tuple(r) for r in db.execute(sql, (operation,))]

        assert [who for who, _ in audited("kma.certificate_renew_request")] == ["so"]
        [(who, message)] = wait_until(
            lambda: audited("kma.certificate_renew"), 30, what="the renewal's event"
        )
        assert who == "kma-dal-2" and "a Security Officer asked for it" in message
    finally:
        second.stop()
        first.stop()


def test_a_cluster_kma_renews_its_node_certificate_and_every_node_trusts_it_without_a_gap(
    tmp_path: Path,
) -> None:
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    try:
        second.start()
        node = files_of(second)
        old_cert, old_key = tmp_path / "old.crt", tmp_path / "old.key"
        old_cert.write_bytes(node.node_cert.read_bytes())
        old_key.write_bytes(node.node_key.read_bytes())
        old_key.chmod(0o600)
        first_raft = files_of(first).load().raft_address

        def node_expiry() -> object:
            """As the first KMA records it (its replica: rebuilt by rqlited at each restart)."""
            with replica(first) as db:
                sql = (
                    "SELECT not_after FROM kma_certificates WHERE kma_id = 'kma-dal-2' AND purpose = 'node' "
                    "AND revoked_at IS NULL ORDER BY issued_at DESC LIMIT 1"
                )
                try:
                    row = db.execute(sql).fetchone()
                except sqlite3.Error:  # being rebuilt
                    return before
                return before if row is None else row[0]

        before: object = None
        before = node_expiry()
        drive_dir, key_id, material = a_drive_with_a_key(first, tmp_path, "t10k-dal-01", "E38004")
        with keep_reading(drive_dir, key_id, dropped_ok=True) as (reads, failures):
            # When a Security Officer renews the second KMA's certificates
            first.client("so").renew_kma_certificate("kma-dal-2")

            # Then it moves to a new node certificate once the first node trusts it; the first node
            # lets the new one in and, once the entry pins it alone, refuses the old one (each
            # rqlited restarts as the pins change: its port is closed for a moment)
            wait_until(lambda: node.node_cert.read_bytes() != old_cert.read_bytes(), 120, what="the switch")
            wait_until(
                lambda: lets_in(first_raft, node.node_cert, node.node_key), 120, what="the new one let in"
            )
            wait_until(lambda: not lets_in(first_raft, old_cert, old_key), 120, what="the old one refused")
            wait_until(lambda: node_expiry() != before, 120, what="the new node certificate recorded")
        assert not failures, failures[:3]
        assert reads and all(r == material for r in reads)

        # And the cluster takes writes again once each rqlited is back (management writes may wait
        # out a leader election while the nodes restart; the drive's reads above never did)
        def written() -> bool:
            try:
                second.client("so").create_site("renewed", "After the renewal")
            except (ClusterUnavailable, Unauthenticated):
                return False
            return True

        wait_until(written, 60, what="a write through the renewed KMA", interval=0.5)
        with replica(first) as db:
            wait_until(
                lambda: db.execute("SELECT 1 FROM sites WHERE id = 'renewed'").fetchone(),
                30,
                what="replicated",
            )
            sql = "SELECT message FROM audit_events WHERE operation = 'kma.node_certificate_renew'"
            said = [r[0] for r in db.execute(sql)]
        assert any("staged a new node certificate" in m for m in said)
        assert any("every node trusted it before" in m for m in said)
    finally:
        second.stop()
        first.stop()
