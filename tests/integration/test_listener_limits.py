"""Strangers cannot fill either port of a KMA (issue 10, findings 4, 5, 12, 13).

One KMA with its listener limits lowered in kma.toml ([listeners], as an administrator would set
them) so that each test needs only a handful of connections and seconds. Strangers come from
other loopback addresses (127.0.0.2 ...) than the enrolled agent and the manager (127.0.0.1).
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.kmip.client import parse_response, request_message
from kma.kmip.enums import BatchErrorContinuation, Operation, ResultReason, ResultStatus
from tests.support.agents import enrolled_demo_agent, events, kmip, last_event, service_address
from tests.support.kma_process import RunningKma, read_only_db
from tests.support.waiting import wait_until

LIMITS = {
    "service_max_connections": 12,
    "kept_for_agents": 6,  # so at most 6 connections without a client certificate
    "management_max_connections": 8,
    "max_per_address": 4,
    "handshake_timeout": 2,
    "request_timeout": 2,
    "anonymous_idle_timeout": 2,
    "kmip_max_answer": 65536,
}
AGENT = "t10k-dal-01"
CLOSE_WAIT = 8.0  # well past every lowered limit, well short of the defaults (10 s and more)


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("limits"), listeners=LIMITS)
    yield kma
    kma.stop()


@pytest.fixture(scope="module")
def agent_dir(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return enrolled_demo_agent(kma, tmp_path_factory, AGENT)


def address_of(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def tcp(address: tuple[str, int], source: str) -> socket.socket:
    return socket.create_connection(address, timeout=5, source_address=(source, 0))


def tls(kma: RunningKma, address: tuple[str, int], source: str) -> ssl.SSLSocket | None:
    """A TLS connection without a client certificate, handshake done; None if it was refused."""
    context = ssl.create_default_context(cadata=kma.ca_pem)
    context.check_hostname = False
    raw = tcp(address, source)
    try:
        return context.wrap_socket(raw)
    except (ssl.SSLError, OSError):
        raw.close()
        return None


def is_closed(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except (ssl.SSLError, OSError):
        return True


def held(socks: list[ssl.SSLSocket | None]) -> list[ssl.SSLSocket]:
    time.sleep(0.5)  # the listener decides right after each handshake
    return [s for s in socks if s is not None and not is_closed(s)]


def refusals(kma: RunningKma, operation: str) -> list[str]:
    with read_only_db(kma) as db:
        rows = db.execute("SELECT message FROM audit_events WHERE operation = ?", (operation,))
        return [r[0] for r in rows]


def close_all(socks: list[ssl.SSLSocket | None] | list[socket.socket]) -> None:
    for s in socks:
        if s is not None:
            s.close()
    time.sleep(0.3)  # the listener counts them out


# --- the service listener (agents) ------------------------------------------------------------
def test_strangers_without_certificates_cannot_crowd_out_enrolled_agents(
    kma: RunningKma, agent_dir: Path
) -> None:
    service = address_of(service_address(kma))
    strangers = [tls(kma, service, f"127.0.0.{n}") for n in (2, 3, 4) for _ in range(4)]
    try:
        assert len(held(strangers)) <= 6, "connections without a certificate used the room kept for agents"
        agent = kmip(agent_dir)  # a drive mounting a tape meanwhile
        try:
            assert agent.discover_versions()
            assert agent.get(agent.create_and_activate("E10001"))
        finally:
            agent.close()
        assert any("kept for enrolled agents" in m for m in refusals(kma, "service.refused"))
        # They may enroll or ask what the KMA speaks, not linger: the idle limit closes them.
        wait_until(
            lambda: all(s is None or is_closed(s) for s in strangers), CLOSE_WAIT, what="strangers closed"
        )
    finally:
        close_all(strangers)


def test_one_address_holds_only_so_many_unidentified_connections(kma: RunningKma) -> None:
    service = address_of(service_address(kma))
    strangers = [tls(kma, service, "127.0.0.5") for _ in range(8)]
    try:
        assert len(held(strangers)) <= 4
        assert any("127.0.0.5" in m and "per address" in m for m in refusals(kma, "service.refused"))
    finally:
        close_all(strangers)


def test_a_silent_connection_is_closed_at_the_handshake_deadline(kma: RunningKma) -> None:
    silent = [tcp(address_of(service_address(kma)), "127.0.0.6"), tcp(address_of(kma.address), "127.0.0.6")]
    try:
        wait_until(lambda: all(is_closed(s) for s in silent), CLOSE_WAIT, what="silent connections closed")
    finally:
        close_all(silent)


def test_stalled_enrollments_hold_up_no_one(kma: RunningKma) -> None:
    """Given enrollment requests stalled half-way, the CA is still served at once (finding 13)."""
    service = address_of(service_address(kma))
    stalled = [tls(kma, service, "127.0.0.7") for _ in range(3)]
    try:
        for s in stalled:
            assert s is not None
            s.sendall(b"POST /v1/enroll HTTP/1.1\r\nHost: kma\r\nContent-Length: 300\r\n\r\n{")
        fetch = tls(kma, service, "127.0.0.8")
        assert fetch is not None
        fetch.settimeout(1.5)  # before any stalled request's deadline (2 s): it must not wait for them
        fetch.sendall(b"GET /v1/ca HTTP/1.1\r\nHost: kma\r\n\r\n")
        answer = b""
        while chunk := fetch.recv(65536):
            answer += chunk
        fetch.close()
        assert answer.startswith(b"HTTP/1.1 200")
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["ca_pem"] == kma.ca_pem
    finally:
        close_all(stalled)


# --- the management listener (managers) --------------------------------------------------------
def test_management_closes_idle_and_half_sent_requests_and_keeps_answering(kma: RunningKma) -> None:
    management = address_of(kma.address)
    idle = tls(kma, management, "127.0.0.9")
    half = tls(kma, management, "127.0.0.9")
    assert idle is not None and half is not None
    half.sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: kma\r\nX-Slow: ")
    try:
        wait_until(lambda: is_closed(idle) and is_closed(half), CLOSE_WAIT, what="idle and half-sent closed")
        assert kma.client().get_status().cluster_name  # the listener keeps answering
    finally:
        close_all([idle, half])


def test_management_caps_connections_per_address_and_in_all(kma: RunningKma) -> None:
    management = address_of(kma.address)
    one_address = [tls(kma, management, "127.0.0.10") for _ in range(6)]
    try:
        assert len(held(one_address)) <= 4
        assert kma.client().get_status().cluster_name  # others are still served meanwhile
    finally:
        close_all(one_address)
    many = [tls(kma, management, f"127.0.1.{n}") for n in range(1, 11)]
    try:
        assert len(held(many)) <= 8
        assert any("this listener's limit" in m for m in refusals(kma, "api.connection_refused"))
    finally:
        close_all(many)
    assert kma.client().get_status().cluster_name


def test_both_listeners_share_one_tls_policy(kma: RunningKma) -> None:
    """TLS 1.2 with CBC or ChaCha20 suites is refused by both listeners (finding 12)."""
    for address in (kma.address, service_address(kma)):
        for suite in ("ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"):
            context = ssl.create_default_context(cadata=kma.ca_pem)
            context.check_hostname = False
            context.maximum_version = ssl.TLSVersion.TLSv1_2
            context.set_ciphers(suite)
            with tcp(address_of(address), "127.0.0.1") as raw, pytest.raises(ssl.SSLError):
                context.wrap_socket(raw)
        context = ssl.create_default_context(cadata=kma.ca_pem)
        context.check_hostname = False
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        with context.wrap_socket(tcp(address_of(address), "127.0.0.1")) as accepted:
            assert accepted.cipher()[0] in ("ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256")


# --- crowds that stay (issue 26, item 2): long timeouts, so only the limits decide ---------------
CROWDED = {**LIMITS, "handshake_timeout": 60, "request_timeout": 60, "anonymous_idle_timeout": 60}


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("crowded"), listeners=CROWDED)
    yield kma
    kma.stop()


@pytest.fixture(scope="module")
def crowded_agent(crowded: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return enrolled_demo_agent(crowded, tmp_path_factory, AGENT)


def test_a_manager_is_served_when_strangers_fill_the_management_port(crowded: RunningKma) -> None:
    """Idle and half-sent connections from five addresses, each at its limit: a manager at a sixth
    address still signs in and is answered; the strangers' oldest connections made room."""
    management = address_of(crowded.address)
    strangers = [tls(crowded, management, f"127.0.2.{n}") for n in range(1, 6) for _ in range(4)]
    for s in strangers[::3]:
        if s is not None:
            s.sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: kma\r\nX-Slow: ")  # half-sent
    try:
        assert len(held(strangers)) <= CROWDED["management_max_connections"]
        assert crowded.client("so").get_status().cluster_name
        assert crowded.client("op").get_status().cluster_name  # a second manager, a second connection
        assert any("to make room" in m for m in refusals(crowded, "api.connection_refused"))
    finally:
        close_all(strangers)


def test_enrolled_agents_get_in_past_certificate_less_connections_from_their_own_address(
    crowded: RunningKma, crowded_agent: Path
) -> None:
    """A library controller (or NAT) shares the drives' address: its connections without a client
    certificate fill that address's allowance, and the drives behind it still get in."""
    agent_dir = crowded_agent
    service = address_of(service_address(crowded))
    strangers = [tls(crowded, service, "127.0.0.1") for _ in range(CROWDED["max_per_address"] + 2)]
    try:
        assert len(held(strangers)) == CROWDED["max_per_address"]
        for _ in range(2):  # two drives, each with its own connection
            agent = kmip(agent_dir)
            try:
                assert agent.get(agent.create_and_activate("E26001"))
            finally:
                agent.close()
    finally:
        close_all(strangers)


def test_enrolled_agents_get_in_past_silent_handshakes_from_their_own_address(
    crowded: RunningKma, crowded_agent: Path
) -> None:
    """Connections that never start their TLS handshake, from the drives' own address, fill that
    address's handshakes; the oldest makes room, so a drive still connects."""
    agent_dir = crowded_agent
    service = address_of(service_address(crowded))
    silent = [tcp(service, "127.0.0.1") for _ in range(CROWDED["max_per_address"])]
    try:
        agent = kmip(agent_dir)
        try:
            assert agent.get(agent.create_and_activate("E26002"))
        finally:
            agent.close()
        assert any("to make room" in m for m in refusals(crowded, "service.refused"))
    finally:
        close_all(silent)


def test_a_small_message_asking_for_a_huge_answer_is_bounded_and_summarised(
    kma: RunningKma, agent_dir: Path
) -> None:
    """Issue 39, item 3: a 40 KB message of 1,000 empty Locates (each answering every key the drive
    may see: about 250 KB in all here) is answered within the KMA's limit (lowered to 64 KB here):
    the Locate that passes it fails Response Too Large, the rest are not run; the trail holds a few
    events and one summary, not a thousand."""
    before = last_event(kma)
    with kmip(agent_dir) as client:
        continuing = BatchErrorContinuation.CONTINUE  # (with Stop, the items after it are left out)
        message = request_message([(Operation.LOCATE, b"")] * 1000, continuation=continuing)
        assert len(message) < 65536
        raw = client.send_raw(message)
        results = parse_response(raw)
        assert len(raw) <= 65536 + 1000 * 200  # the limit, and the failed items' short answers
        ran = [r for r in results if r.status == ResultStatus.SUCCESS]
        failed = [r for r in results if r.status != ResultStatus.SUCCESS]
        assert ran and failed and len(ran) + len(failed) == 1000
        assert {r.reason for r in failed} == {ResultReason.RESPONSE_TOO_LARGE}
        assert "the answer would pass 65,536 bytes" in (failed[0].message or "")
        assert all("not run" in (r.message or "") for r in failed[1:])
        # A client's own Maximum Response Size is honoured the same way
        asked = request_message([(Operation.LOCATE, b"")] * 3, max_response_size=64)
        reasons = [r.reason for r in parse_response(client.send_raw(asked))]
        assert reasons == [ResultReason.RESPONSE_TOO_LARGE] * 3
        assert client.locate()  # the connection goes on
    trail = events(kma, before)
    assert len(trail) < 60
    summaries = [e["message"] for e in trail if e["operation"] == "kmip.message"]
    assert any("more reads in this message, summarised" in m and "items not run" in m for m in summaries)
