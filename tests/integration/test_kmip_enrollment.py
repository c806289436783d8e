"""Enrollment and who may speak KMIP: one-time passphrases, disabled agents, replaced, foreign,
expired or missing certificates. Every refusal is clear, audited, and changes nothing else."""

from __future__ import annotations

import json
import socket
import sqlite3
import ssl
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from kma.agent.enroll import make_csr
from kma.crypto import CertifiedKey, WrappingKey, create_cluster_ca, sign_agent_csr
from kma.kmip.client import KmipClient, KmipFailure
from kma.kmip.enums import ResultReason
from kma.kmip.tls import agent_context
from tests.support.agents import (
    agent_state,
    demo_passphrase,
    enroll,
    events,
    kmip,
    last_event,
    new_passphrase,
    service_address,
)
from tests.support.kma_process import RunningKma
from tests.support.waiting import wait_until


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("kmip-enrollment"))
    yield kma
    kma.stop()


def _created(client: KmipClient) -> str | None:
    """A new key's id, or None while the KMA still refuses this agent permission."""
    try:
        return client.create()
    except KmipFailure as refused:
        if refused.reason != ResultReason.PERMISSION_DENIED:
            raise
        return None


def _refusals(kma: RunningKma, after: int, operation: str) -> list[dict[str, object]]:
    return [e for e in events(kma, after, operation) if e["condition"] == "error"]


def test_enrolled_agent_learns_the_cluster_kmas(kma: RunningKma, tmp_path: Path) -> None:
    enroll(kma, "t10k-dal-02", tmp_path / "a", demo_passphrase(kma, "t10k-dal-02"))
    kmas = json.loads((tmp_path / "a" / "kmas.json").read_text())
    assert kmas == [
        {
            "id": "kma-dal-1",
            "name": "KMA Dallas 1",
            "site_id": "dallas",
            "service_address": service_address(kma),
            "status": "ready",
        }
    ]
    assert json.loads((tmp_path / "a" / "agent.json").read_text())["site_id"] == "dallas"
    assert kma.client("op").get_agent("t10k-dal-02").enrolled


def test_a_used_passphrase_no_longer_works(kma: RunningKma, tmp_path: Path) -> None:
    passphrase = demo_passphrase(kma, "t10k-bos-01")
    enroll(kma, "t10k-bos-01", tmp_path / "first", passphrase)
    before, state = last_event(kma), agent_state(kma)
    again = enroll(kma, "t10k-bos-01", tmp_path / "again", passphrase, check=False)
    assert again.returncode == 2
    assert "wrong, or the passphrase was already used" in again.stderr
    assert not (tmp_path / "again" / "agent.pem").exists()
    assert agent_state(kma) == state  # nothing written but the audit event
    assert _refusals(kma, before, "agent.enroll")[0]["subject_id"] == "t10k-bos-01"


def test_a_wrong_passphrase_is_refused_and_does_not_use_up_the_right_one(
    kma: RunningKma, tmp_path: Path
) -> None:
    before, state = last_event(kma), agent_state(kma)
    wrong = enroll(kma, "lto4-dal-01", tmp_path / "wrong", "AAAAAA-BBBBBB-CCCCCC-DDDDDD", check=False)
    assert wrong.returncode == 2 and "wrong" in wrong.stderr
    assert agent_state(kma) == state
    refusal = _refusals(kma, before, "agent.enroll")[0]
    assert refusal["message"] == "refused enrollment: wrong passphrase"
    enroll(kma, "lto4-dal-01", tmp_path / "right", demo_passphrase(kma, "lto4-dal-01"))


def test_a_disabled_agent_can_neither_enroll_nor_use_its_certificate(kma: RunningKma, tmp_path: Path) -> None:
    op = kma.client("op")
    # Given one enrolled agent and one about to enroll, both disabled by the Operator
    enrolled = tmp_path / "enrolled"
    enroll(kma, "9840d-bos-01", enrolled, demo_passphrase(kma, "9840d-bos-01"))
    op.update_agent("9840d-bos-01", enabled=False)
    op.create_agent("t10k-dal-09", "dallas", "backup-dallas", "spare drive")
    passphrase = new_passphrase(kma, "t10k-dal-09")
    op.update_agent("t10k-dal-09", enabled=False)
    before = last_event(kma)
    # Then enrollment is refused, saying why
    refused = enroll(kma, "t10k-dal-09", tmp_path / "spare", passphrase, check=False)
    assert refused.returncode == 2 and "disabled" in refused.stderr
    # And KMIP refuses the enrolled one
    with kmip(enrolled) as client, pytest.raises(KmipFailure) as denied:
        client.create()
    assert denied.value.reason == ResultReason.PERMISSION_DENIED and "disabled" in denied.value.message
    assert _refusals(kma, before, "agent.enroll") and _refusals(kma, before, "kmip.create")
    # When it is enabled again, it works again (the passphrase was not used up)
    op.update_agent("9840d-bos-01", enabled=True)
    op.update_agent("t10k-dal-09", enabled=True)
    with kmip(enrolled) as client:  # permissions are re-read at most once a second on a connection
        wait_until(lambda: _created(client), 10, what="the enabled agent may create keys again")
    enroll(kma, "t10k-dal-09", tmp_path / "spare", passphrase)


def test_enrolling_again_retires_the_old_certificate(kma: RunningKma, tmp_path: Path) -> None:
    op = kma.client("op")
    op.create_agent("t10k-dal-10", "dallas", "backup-dallas", "drive re-imaged")
    enroll(kma, "t10k-dal-10", tmp_path / "old", new_passphrase(kma, "t10k-dal-10"))
    enroll(kma, "t10k-dal-10", tmp_path / "new", new_passphrase(kma, "t10k-dal-10"))
    before = last_event(kma)
    with kmip(tmp_path / "old") as client, pytest.raises(KmipFailure) as refused:
        client.create()
    assert refused.value.reason == ResultReason.AUTHENTICATION_NOT_SUCCESSFUL
    assert "replaced" in refused.value.message
    assert _refusals(kma, before, "kmip.authenticate")
    with kmip(tmp_path / "new") as client:
        assert client.create()


def _csr_cert(
    tmp_path: Path, ca: CertifiedKey, agent_id: str, now: datetime | None = None, days: int = 365
) -> Path:
    out = tmp_path / "forged"
    out.mkdir(exist_ok=True)
    key_pem, csr = make_csr(agent_id)
    (out / "agent.key").write_bytes(key_pem)
    (out / "agent.pem").write_bytes(sign_agent_csr(ca, csr, agent_id, now=now, days=days))
    return out


def _handshake_refused(kma: RunningKma, tmp_path: Path, cert_dir: Path) -> None:
    context = agent_context(tmp_path / "ca.pem", cert_dir / "agent.pem", cert_dir / "agent.key")
    client = KmipClient(service_address(kma), context)
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        client.connect()
        client.discover_versions()  # TLS 1.3: the server's alert arrives with the first read
    client.close()


def test_a_certificate_from_another_ca_is_refused_by_tls(kma: RunningKma, tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text(kma.ca_pem)
    forged = _csr_cert(tmp_path, create_cluster_ca("Somebody else"), "t10k-dal-01")
    before = last_event(kma)
    _handshake_refused(kma, tmp_path, forged)
    refusal = wait_until(lambda: _refusals(kma, before, "service.tls"), 10, what="the refusal audited")
    assert refusal and "certificate" in str(refusal[0]["message"]).lower()


def _cluster_ca(kma: RunningKma) -> CertifiedKey:
    """The cluster CA's key, as only the KMA holds it (test-only: the autonomous unlock file)."""
    with sqlite3.connect(f"file:{kma.data_dir / 'kma.db'}?mode=ro", uri=True) as db:
        blob = db.execute("SELECT autounlock_master FROM kmas").fetchone()[0]
        ca_pem, ca_key = db.execute("SELECT ca_cert_pem, ca_key_wrapped FROM cluster").fetchone()
    local = WrappingKey((kma.data_dir / "unlock.key").read_bytes())
    master = WrappingKey(local.unwrap("autounlock:kma-dal-1", blob))
    return CertifiedKey(ca_pem.encode(), master.unwrap("cluster-ca-key", ca_key))


def test_an_expired_certificate_is_refused_by_tls(kma: RunningKma, tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text(kma.ca_pem)
    long_ago = datetime.now(UTC) - timedelta(days=30)
    expired = _csr_cert(tmp_path, _cluster_ca(kma), "t10k-dal-01", now=long_ago, days=1)
    before = last_event(kma)
    _handshake_refused(kma, tmp_path, expired)
    refusal = wait_until(lambda: _refusals(kma, before, "service.tls"), 10, what="the refusal audited")
    assert "expired" in str(refusal[0]["message"]).lower()


def test_kmip_without_a_client_certificate_is_refused(kma: RunningKma, tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text(kma.ca_pem)
    before = last_event(kma)
    with KmipClient(service_address(kma), agent_context(tmp_path / "ca.pem")) as client:
        assert (1, 4) in client.discover_versions()  # what the server speaks is no secret
        with pytest.raises(KmipFailure) as refused:
            client.create()
    assert refused.value.reason == ResultReason.AUTHENTICATION_NOT_SUCCESSFUL
    assert _refusals(kma, before, "kmip.authenticate")


def test_the_enrollment_route_answers_errors_in_the_api_shape(kma: RunningKma) -> None:
    with httpx.Client(base_url=f"https://{service_address(kma)}", verify=False, timeout=10) as http:
        assert http.get("/v1/ca").json()["fingerprint"] == kma.fingerprint
        missing = http.get("/v1/keys")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        bad = http.post("/v1/enroll", content=b"{not json")
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_request"
        huge = http.post("/v1/enroll", content=b"x" * 100_000)
        assert huge.status_code == 413


def test_an_unused_passphrase_expires_after_a_week(fresh_kma: RunningKma, tmp_path: Path) -> None:
    passphrase = new_passphrase(fresh_kma, "t10k-dal-01")
    fresh_kma.advance_clock(8 * 86400)
    before = last_event(fresh_kma)
    refused = enroll(fresh_kma, "t10k-dal-01", tmp_path / "late", passphrase, check=False)
    assert refused.returncode == 2 and "expired" in refused.stderr
    assert _refusals(fresh_kma, before, "agent.enroll")[0]["message"].endswith("has expired")


def test_a_plain_tcp_client_gets_nothing(kma: RunningKma) -> None:
    host, _, port = service_address(kma).rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(b"\x42\x00\x78\x01\x00\x00\x00\x08" + bytes(8))  # KMIP without TLS
        raw.settimeout(10)
        try:
            answer = raw.recv(100)
        except (ConnectionResetError, TimeoutError):
            answer = b""
        assert not answer.startswith(b"\x42\x00\x7b")  # no KMIP response outside TLS
