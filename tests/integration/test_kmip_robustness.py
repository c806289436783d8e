"""What the network may send: malformed, truncated, oversize, foreign and unknown messages get a
clear KMIP error (or the connection closed), an audit event and nothing else; the server keeps
serving everyone else, also under a stream of random and truncated TTLV."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.kmip import ttlv
from kma.kmip.client import attribute, key_template, parse_response, request_message
from kma.kmip.enums import ObjectType, Operation, ResultReason, ResultStatus, Tag
from tests.support.agents import agent_state, enrolled_demo_agent, events, kmip, last_event
from tests.support.kma_process import RunningKma, ready_pool
from tests.support.waiting import wait_until

AGENT = "t10k-dal-01"


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("kmip-robustness"))
    ready_pool(kma, 5000)  # the good agent issues keys for seconds on end
    yield kma
    kma.stop()


@pytest.fixture(scope="module")
def agent_dir(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return enrolled_demo_agent(kma, tmp_path_factory, AGENT)


def _create() -> bytes:
    payload = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + key_template("E40001")
    return request_message([(Operation.CREATE, payload)])


def _only_error(raw: bytes) -> tuple[int | None, str]:
    [result] = parse_response(raw)
    assert result.status == ResultStatus.OPERATION_FAILED
    return result.reason, result.message or ""


def test_a_malformed_body_gets_invalid_message_and_the_connection_stays_usable(
    kma: RunningKma, agent_dir: Path
) -> None:
    state, before = agent_state(kma), last_event(kma)
    with kmip(agent_dir) as client:
        body = ttlv.struct_(Tag.REQUEST_HEADER) + b"\x42\x00\x01\x0f\x00\x00\x00\x00"  # item type 0x0F
        reason, message = _only_error(client.send_raw(ttlv.struct_(Tag.REQUEST_MESSAGE, body)))
        assert reason == ResultReason.INVALID_MESSAGE and "unknown item type 0x0F" in message
        bad_padding = _create()[:-1] + b"\x01"
        reason, message = _only_error(client.send_raw(bad_padding))
        assert "non-zero padding" in message
        assert client.create()  # same connection, next message
    assert len(events(kma, before, "kmip.malformed")) == 2
    assert len(agent_state(kma)["keys"]) == len(state["keys"]) + 1


def test_envelope_errors_are_explained(kma: RunningKma, agent_dir: Path) -> None:
    header = ttlv.struct_(
        Tag.REQUEST_HEADER,
        ttlv.struct_(
            Tag.PROTOCOL_VERSION,
            ttlv.integer(Tag.PROTOCOL_VERSION_MAJOR, 1),
            ttlv.integer(Tag.PROTOCOL_VERSION_MINOR, 2),
        ),
        ttlv.integer(Tag.BATCH_COUNT, 3),
    )
    item = ttlv.struct_(
        Tag.BATCH_ITEM, ttlv.enum(Tag.OPERATION, Operation.QUERY), ttlv.struct_(Tag.REQUEST_PAYLOAD)
    )
    with kmip(agent_dir) as client:
        reason, message = _only_error(client.send_raw(ttlv.struct_(Tag.REQUEST_MESSAGE, header, item)))
        assert reason == ResultReason.INVALID_MESSAGE and "batch count (3)" in message
        reason, message = _only_error(
            client.send_raw(request_message([(Operation.GET, b"")], version=(3, 0)))
        )
        assert reason == ResultReason.INVALID_MESSAGE and "KMIP 3.0 is not supported" in message
        [unknown] = client.batch([(0x7FFFFFF0, b"")])
        assert unknown.reason == ResultReason.OPERATION_NOT_SUPPORTED and "not supported" in (
            unknown.message or ""
        )
        [encrypt] = client.batch([(0x1F, b"")])  # a KMIP operation this KMA does not offer
        assert encrypt.reason == ResultReason.OPERATION_NOT_SUPPORTED


def test_unknown_operations_are_audited(kma: RunningKma, agent_dir: Path) -> None:
    before = last_event(kma)
    with kmip(agent_dir) as client:
        client.batch([(0x7FFFFFF0, b"")])
    [event] = events(kma, before, "kmip.unsupported")
    assert event["entity_id"] == AGENT and "0x7FFFFFF0" in event["message"]


def test_an_oversize_message_is_refused_before_it_is_read(kma: RunningKma, agent_dir: Path) -> None:
    before = last_event(kma)
    with kmip(agent_dir) as client:
        client.sock.sendall(b"\x42\x00\x78\x01" + (10 * 1024 * 1024).to_bytes(4, "big"))  # claims 10 MiB
        reason, message = _only_error(client.send_raw(b""))
        assert reason == ResultReason.INVALID_MESSAGE and "exceeds this KMA's limit" in message
        with pytest.raises((ConnectionError, OSError)):
            client.send_raw(_create())  # the connection was closed
    assert events(kma, before, "kmip.oversize")


def test_a_foreign_message_or_protocol_closes_the_connection(kma: RunningKma, agent_dir: Path) -> None:
    before = last_event(kma)
    with kmip(agent_dir) as client:
        response_not_request = ttlv.struct_(Tag.RESPONSE_MESSAGE)
        reason, message = _only_error(client.send_raw(response_not_request))
        assert "not a KMIP request message" in message
    with kmip(agent_dir) as client:
        client.sock.sendall(b"\x16\x03\x01 something else entirely")
        reason, message = _only_error(client.send_raw(b""))
        assert "neither KMIP nor HTTP" in message
    assert len(events(kma, before, "kmip.malformed")) == 2


def test_a_truncated_message_is_audited(kma: RunningKma, agent_dir: Path) -> None:
    before = last_event(kma)
    client = kmip(agent_dir)
    assert client.sock is not None
    client.sock.sendall(_create()[:50])
    client.sock.unwrap()  # TLS close_notify: the message ends here, 50 bytes in
    client.sock.close()
    [event] = wait_until(lambda: events(kma, before, "kmip.truncated"), 10, what="the truncation audited")
    assert "ended after 50 bytes" in event["message"]


def test_an_agent_that_sends_half_a_request_and_stalls_holds_up_no_one(
    kma: RunningKma, agent_dir: Path
) -> None:
    """A drive whose request stops half-way (a stalled link) costs the others nothing: they are
    served meanwhile, and the half request is answered once the rest of it arrives."""
    with kmip(agent_dir) as stalled, kmip(agent_dir) as other:
        assert stalled.sock is not None
        uid = other.create_and_activate("E40004")
        material = other.get(uid)
        whole = request_message([(Operation.GET, ttlv.text(Tag.UNIQUE_IDENTIFIER, uid))])
        stalled.sock.sendall(whole[:5])  # not even a whole header
        for _ in range(20):
            assert other.get(uid) == material
        stalled.sock.sendall(whole[5:40])  # the header and part of the body
        for _ in range(20):
            assert other.get(uid) == material
        [result] = parse_response(stalled.send_raw(whole[40:]))
        assert result.check().find(Tag.SYMMETRIC_KEY) is not None
        assert stalled.get(uid) == material  # and the connection goes on as usual


def _mutations(rng: random.Random, valid: list[bytes]) -> bytes:
    """Random bytes, or a valid message cut short, with flipped bytes, or a lying length."""
    base = bytearray(rng.choice(valid))
    kind = rng.randrange(5)
    if kind == 0:
        return bytes([0x42, 0x00, 0x78, 0x01]) + rng.randbytes(4) + rng.randbytes(rng.randrange(64))
    if kind == 1:
        return bytes(base[: rng.randrange(1, len(base))])
    if kind == 2:
        for _ in range(rng.randrange(1, 6)):
            base[rng.randrange(8, len(base))] = rng.randrange(256)
        return bytes(base)
    if kind == 3:
        at = rng.randrange(8, len(base) - 8, 8)
        base[at + 4 : at + 8] = rng.randrange(0, 1 << 16).to_bytes(4, "big")
        return bytes(base)
    return b"\x42" + rng.randbytes(rng.randrange(200))


def _kmip_2_0() -> list[bytes]:
    """KMIP 2.0 messages whose attributes go by tag (the translation to 1.4 gets fuzzed too)."""
    from kma.kmip import v2

    name = ttlv.struct_(Tag.NAME, ttlv.text(Tag.NAME_VALUE, "E40003"), ttlv.enum(Tag.NAME_TYPE, 1))
    attributes = ttlv.struct_(
        v2.ATTRIBUTES,
        ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, 3),
        ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, 256),
        name,
    )
    uid = ttlv.text(Tag.UNIQUE_IDENTIFIER, "0" * 32)
    symmetric = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY)
    items = [
        (Operation.CREATE, symmetric + attributes),
        (Operation.LOCATE, attributes),
        (Operation.GET_ATTRIBUTES, uid + ttlv.enum(v2.ATTRIBUTE_REFERENCE, Tag.STATE)),
        (Operation.MODIFY_ATTRIBUTE, uid + ttlv.struct_(v2.NEW_ATTRIBUTE, name)),
        (Operation.DELETE_ATTRIBUTE, uid + ttlv.struct_(v2.CURRENT_ATTRIBUTE, name)),
    ]
    return [request_message([item], (2, 0)) for item in items]


def test_random_and_truncated_ttlv_never_disturbs_other_agents(kma: RunningKma, agent_dir: Path) -> None:
    valid = [
        _create(),
        request_message([(Operation.LOCATE, b"")]),
        request_message([(Operation.DISCOVER_VERSIONS, b"")]),
        *_kmip_2_0(),
    ]
    stop = threading.Event()
    sent = [0]
    served: list[float] = []
    failures: list[str] = []

    def fuzz(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            try:
                with kmip(agent_dir) as client:
                    assert client.sock is not None
                    client.sock.settimeout(0.5)
                    for _ in range(20):
                        client.sock.sendall(_mutations(rng, valid))
                        sent[0] += 1
                        try:
                            client.sock.recv(65536)
                        except TimeoutError:
                            break  # the server waits for the rest of a message that never comes
            except OSError:
                pass  # the server closed a connection it could no longer trust: reconnect

    def work() -> None:
        with kmip(agent_dir) as client:
            # Its key made first: the fuzzers' valid Creates soon use up a demo's 190 Ready keys (a
            # one-KMA cluster issues only keys a backup holds), a refusal that is no disturbance.
            uid = client.create_and_activate("E40002")
            material = client.get(uid)
            while not stop.is_set():
                began = time.perf_counter()
                try:
                    assert client.get(uid) == material
                    assert uid in client.locate(data_unit="E40002")
                except Exception as exc:  # noqa: BLE001 - any failure of the good client fails the test
                    failures.append(repr(exc))
                served.append(time.perf_counter() - began)

    began = time.monotonic()
    threads = [threading.Thread(target=fuzz, args=(seed,)) for seed in range(3)] + [
        threading.Thread(target=work)
    ]
    for t in threads:
        t.start()
    try:  # the fuzzers run until they sent their share and the good agent was served all along
        wait_until(
            lambda: sent[0] > 200 and len(served) > 50 and time.monotonic() > began + 5,
            120,
            what="200 fuzzed messages while the good agent is served",
        )
    finally:
        stop.set()
    for t in threads:
        t.join(timeout=30)
    assert not failures, failures[:3]
    assert sent[0] > 200 and len(served) > 50
    assert "Traceback" not in kma.log_text()  # every bad message was an expected refusal
    with kmip(agent_dir) as client:
        assert client.discover_versions()


def test_deep_nesting_and_oversized_attribute_values_are_refused(kma: RunningKma, agent_dir: Path) -> None:
    """Issue 39, item 8: TTLV nested deeper than a KMIP message needs is Invalid Message (the
    connection goes on); an attribute value longer than a key keeps, of any type, is refused with
    its reason and nothing is stored."""
    with kmip(agent_dir) as client:
        nested = ttlv.text(Tag.ATTRIBUTE_VALUE, "x")
        for _ in range(40):
            nested = ttlv.struct_(Tag.ATTRIBUTE_VALUE, nested)
        reason, message = _only_error(client.send_raw(request_message([(Operation.LOCATE, nested)])))
        assert reason == ResultReason.INVALID_MESSAGE and "deep" in message
        uid = client.create()
        key = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)
        for value in (
            ttlv.text(Tag.ATTRIBUTE_VALUE, "v" * 5000),
            ttlv.byte_string(Tag.ATTRIBUTE_VALUE, b"\x01" * 30000),
        ):
            [result] = client.batch([(Operation.ADD_ATTRIBUTE, key + attribute("x-Big", value))])
            assert result.status == ResultStatus.OPERATION_FAILED, result
            assert "x-Big" in (result.message or "")
        assert "x-Big" not in client.get_attributes(uid, [])
