"""`GET /metrics` on a real KMA: Prometheus can parse it, counters move with traffic, and only a
metrics token or a signed-in user may read it."""

from __future__ import annotations

import socket
import ssl
import tomllib
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kms_client import Unauthenticated
from kms_client.trust import ssl_context_for
from tests.integration.helpers import error_of
from tests.support.agents import enroll, kmip, new_passphrase, service_address
from tests.support.kma_process import RunningKma
from tests.support.waiting import wait_until

TOKEN = "f" * 16 + "0123456789abcdef0123456789abcdef"


@pytest.fixture
def kma(tmp_path: Path) -> RunningKma:
    """A demo KMA whose kma.toml names a metrics token file, as an operator sets it up."""
    kma = RunningKma.demo_in(tmp_path)
    (kma.data_dir / "metrics.token").write_text(TOKEN + "\n")
    (kma.data_dir / "metrics.token").chmod(0o600)
    with open(kma.data_dir / "kma.toml", "a", encoding="utf-8") as config:
        config.write('\n[metrics]\ntoken_file = "metrics.token"\n')
    kma.restart()
    yield kma  # type: ignore[misc]
    kma.stop()


def scrape(kma: RunningKma, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"https://{kma.address}/metrics", headers=headers, verify=ssl_context_for(kma.ca_pem))


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_parse_and_count_key_requests_audit_events_and_tls_refusals(
    kma: RunningKma, tmp_path: Path
) -> None:
    before = samples(scrape(kma, TOKEN).text)
    assert value(before, "kma_locked") == 0
    assert value(before, "kma_pool_ready_keys") > 0
    assert value(before, "kma_replication_lag_writes") == 0

    # When a drive writes two tapes and reads their keys, and a stranger fails a TLS handshake
    enroll(kma, "t10k-dal-02", tmp_path / "drive", new_passphrase(kma, "t10k-dal-02"))
    drive = kmip(tmp_path / "drive")
    try:
        for volser in ("E50001", "E50002"):
            key_id, _ = drive.write_key(volser)
            drive.get(key_id)
    finally:
        drive.close()
    host, port = service_address(kma).rsplit(":", 1)
    with socket.create_connection((host, int(port))) as raw, pytest.raises((ssl.SSLError, OSError)):
        untrusting = ssl.create_default_context()  # trusts no cluster CA: the handshake fails
        untrusting.wrap_socket(raw, server_hostname="kma").do_handshake()

    response = scrape(kma, TOKEN)
    assert response.headers["content-type"].startswith("text/plain")
    after = samples(response.text)
    assert value(after, "kma_key_requests_total", operation="get", result="success") == (
        value(before, "kma_key_requests_total", operation="get", result="success") + 2
    )
    assert value(after, "kma_key_requests_total", operation="write_key", result="success") >= 2
    assert value(after, "kma_key_request_seconds_count", operation="get") >= 2
    assert value(after, "kma_audit_events_total", severity="info") > value(
        before, "kma_audit_events_total", severity="info"
    )
    assert value(after, "kma_tls_refusals_total", listener="service") >= 1


def test_metrics_are_refused_without_credentials_and_a_wrong_token(kma: RunningKma) -> None:
    for token in (None, "not-the-token"):
        response = scrape(kma, token)
        assert response.status_code == 401
        assert error_of(response)["code"] == "unauthenticated"
        assert response.headers["www-authenticate"] == 'Bearer realm="kma"'


def test_a_new_token_is_read_without_a_restart(kma: RunningKma) -> None:
    new_token = "e" * 64
    (kma.data_dir / "metrics.token.new").write_text(new_token + "\n")
    (kma.data_dir / "metrics.token.new").chmod(0o600)  # a token others can read admits nobody
    (kma.data_dir / "metrics.token.new").replace(kma.data_dir / "metrics.token")
    assert scrape(kma, new_token).status_code == 200
    assert scrape(kma, TOKEN).status_code == 401


def test_metrics_count_the_management_api_sign_ins_and_refusals_and_say_the_build(kma: RunningKma) -> None:
    before = samples(scrape(kma, TOKEN).text)
    with pytest.raises(Unauthenticated):
        kma.client("so", "not the passphrase")
    so = kma.client("so")
    http = httpx.Client(base_url=f"https://{kma.address}", verify=ssl_context_for(kma.ca_pem))
    headers = {"Authorization": f"Bearer {so.token}"}
    assert http.get("/api/v1/users/no-such-user", headers=headers).status_code == 404
    assert http.get("/api/v1/users/another-missing-user", headers=headers).status_code == 404
    assert http.get("/api/v1/no-such-route").status_code == 404

    text = scrape(kma, TOKEN).text
    after = samples(text)

    def grew(name: str, by: float = 1, **labels: str) -> bool:
        return value(after, name, **labels) - value(before, name, **labels) >= by

    assert grew("kma_sign_ins_total", result="refused") and grew("kma_sign_ins_total", result="signed_in")
    assert grew("kma_api_refusals_total", code="unauthenticated")
    assert grew("kma_api_refusals_total", 3, code="not_found")
    # by route template, not path: both missing users count under one series
    assert grew("kma_api_requests_total", 2, route="/api/v1/users/{user_id}", method="GET", status="404")
    assert grew("kma_api_requests_total", route="/api/v1/auth/sign-in", method="POST", status="200")
    assert grew("kma_api_requests_total", route="unmatched", method="GET", status="404")
    assert not any("no-such" in labels for _, labels_ in after for labels in map(str, labels_))
    version = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    build = [labels for name, labels in after if name == "kma_build_info"]
    assert build and dict(build[0])["version"] == version["project"]["version"]
    assert value(after, "process_resident_memory_bytes") > 0 and value(after, "process_open_fds") > 0
    assert "_created" not in text  # no timestamp series beside each counter


def test_a_signed_in_user_of_any_role_may_read_them_and_a_locked_kma_reports_itself(kma: RunningKma) -> None:
    for user in ("qm1", "op"):
        response = scrape(kma, kma.client(user).token)
        assert response.status_code == 200
    kma.client("so").lock_kma("kma-dal-1")
    assert value(samples(scrape(kma, TOKEN).text), "kma_locked") == 1


def test_a_cluster_kma_counts_each_audit_event_it_commits_once(tmp_path: Path) -> None:
    from tests.support.cluster import BINARY, first_node, replica

    if not BINARY.exists():
        pytest.skip("rqlited not built: scripts/build-rqlite.sh")
    kma, _ = first_node(tmp_path)
    try:
        (kma.data_dir / "metrics.token").write_text(TOKEN + "\n")
        (kma.data_dir / "metrics.token").chmod(0o600)
        with open(kma.data_dir / "kma.toml", "a", encoding="utf-8") as config:
            config.write('\n[metrics]\ntoken_file = "metrics.token"\n')
        kma.restart()
        kma_id = kma.client().get_status().kma_id

        def events_in_store() -> int:
            with replica(kma) as db:
                return int(
                    db.execute("SELECT count(*) FROM audit_events WHERE kma_id = ?", (kma_id,)).fetchone()[0]
                )

        def counted() -> float:
            found = samples(scrape(kma, TOKEN).text)
            return sum(
                value(found, "kma_audit_events_total", severity=s) for s in ("info", "warning", "error")
            )

        # Events of the cluster's write path (a change with its event) and of the outbox (events on
        # their own: sign-ins, a refused sign-in) all count, each once.
        wait_until(lambda: events_in_store() > 0, 10.0, "the start's events in the cluster store")
        store_before, counted_before = events_in_store(), counted()
        op = kma.client("op")
        op.create_data_unit("MET001", "counted on a cluster KMA")
        with pytest.raises(Unauthenticated):
            kma.client("op", "not the passphrase")
        wait_until(lambda: events_in_store() >= store_before + 3, 10.0, "the new events shipped")
        wait_until(
            lambda: counted() - counted_before == events_in_store() - store_before,
            10.0,
            "every committed event counted once",
        )
        assert counted() > counted_before
    finally:
        kma.stop()
