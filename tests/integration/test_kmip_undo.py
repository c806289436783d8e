"""Batch Error Continuation Option Undo against a real `kma serve`: when an item of such a batch
fails, what the items before it wrote is put back (each its own audited write) and they are
answered Operation Undone; a batch holding an operation the KMA cannot undo is refused before
anything in it runs."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.kmip import ttlv
from kma.kmip.client import KmipClient, attribute, key_template, text_attribute
from kma.kmip.enums import (
    AdjustmentType,
    BatchErrorContinuation,
    CryptographicAlgorithm,
    KeyFormatType,
    ObjectType,
    Operation,
    ResultReason,
    ResultStatus,
    Tag,
    UsageMask,
)
from tests.support.agents import enrolled_demo_agent, events, general_keys_demo, key_row, kmip, last_event
from tests.support.kma_process import RunningKma

AGENT = "t10k-dal-01"
UNDO = BatchErrorContinuation.UNDO
ATTRIBUTE_REFERENCE, NEW_ATTRIBUTE = 0x42013B, 0x42013D  # KMIP 2.x tags


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = general_keys_demo(tmp_path_factory, "kmip-undo")
    try:
        yield kma
    finally:
        kma.stop()


@pytest.fixture(scope="module")
def agent_dir(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return enrolled_demo_agent(kma, tmp_path_factory, AGENT)


@pytest.fixture
def client(agent_dir: Path) -> Iterator[KmipClient]:
    with kmip(agent_dir) as c:
        yield c


def register_payload(material: bytes, *attributes: bytes) -> bytes:
    block = ttlv.struct_(
        Tag.KEY_BLOCK,
        ttlv.enum(Tag.KEY_FORMAT_TYPE, KeyFormatType.RAW),
        ttlv.struct_(Tag.KEY_VALUE, ttlv.byte_string(Tag.KEY_MATERIAL, material)),
        ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, CryptographicAlgorithm.AES),
        ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, 8 * len(material)),
    )
    return (
        ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY)
        + ttlv.struct_(Tag.TEMPLATE_ATTRIBUTE, *attributes)
        + ttlv.struct_(Tag.SYMMETRIC_KEY, block)
    )


def located(client: KmipClient, name: str, value: str) -> list[str]:
    found = client.call(Operation.LOCATE, text_attribute(name, value))
    return [str(i.value) for i in found.all(Tag.UNIQUE_IDENTIFIER)]


def test_an_undone_batch_leaves_nothing_behind_and_the_trail_says_so(
    kma: RunningKma, client: KmipClient
) -> None:
    marker = "undo-" + os.urandom(4).hex()
    before = last_event(kma)
    results = client.batch(
        [
            (Operation.REGISTER, register_payload(os.urandom(32))),
            (Operation.ADD_ATTRIBUTE, attribute("x-Marker", ttlv.text(Tag.ATTRIBUTE_VALUE, marker))),
            (Operation.GET, b""),  # its material is not sent: the batch is undone
            (Operation.ACTIVATE, b""),
            (Operation.ACTIVATE, b""),  # a second activation fails: the batch is undone
        ],
        continuation=UNDO,
    )
    assert [r.status for r in results] == [ResultStatus.OPERATION_UNDONE] * 4 + [
        ResultStatus.OPERATION_FAILED
    ]
    assert "only a pre-active key can be activated" in (results[4].message or "")
    uid = results[0].payload.get(Tag.UNIQUE_IDENTIFIER) if results[0].payload is not None else None
    assert isinstance(uid, str)
    get = results[2].payload
    assert get is not None and get.find(Tag.SYMMETRIC_KEY) is None and get.get(Tag.UNIQUE_IDENTIFIER) == uid

    assert located(client, "x-Marker", marker) == []
    assert key_row(kma, uid) == {}
    trail = events(kma, before, "kmip.undo")
    assert {(e["entity_id"], e["subject_id"]) for e in trail} == {(AGENT, uid)}  # the agent's, on the key
    undone = [e["message"] for e in trail]
    assert undone == [
        f"undone: activated key {uid} (back to pre-active)",
        f"undone: the material of {uid} was not sent after all",
        f"undone: added attribute 'x-Marker' to key {uid}",
        f"undone: registered AES-256 key {uid} (removed as if never made; its material was never sent)",
    ]


def test_the_profile_case_activate_check_check_puts_the_key_back_to_pre_active(client: KmipClient) -> None:
    template = key_template(usage_mask=UsageMask.ENCRYPT)
    uid = str(
        client.call(Operation.CREATE, ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + template).get(
            Tag.UNIQUE_IDENTIFIER
        )
    )
    key = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)
    results = client.batch(
        [
            (Operation.ACTIVATE, key),
            (Operation.CHECK, key + ttlv.integer(Tag.CRYPTOGRAPHIC_USAGE_MASK, UsageMask.ENCRYPT)),
            (Operation.CHECK, key + ttlv.integer(Tag.CRYPTOGRAPHIC_USAGE_MASK, UsageMask.DECRYPT)),
        ],
        continuation=UNDO,
    )
    assert [r.status for r in results] == [
        ResultStatus.OPERATION_UNDONE,
        ResultStatus.OPERATION_UNDONE,
        ResultStatus.OPERATION_FAILED,
    ]
    assert results[2].reason == ResultReason.INCOMPATIBLE_CRYPTOGRAPHIC_USAGE_MASK
    assert client.get_attributes(uid, ["State"])["State"] == 1  # Pre-Active
    client.activate(uid)  # and it can be activated as if the batch had never been
    assert client.get_attributes(uid, ["State"])["State"] == 2


def test_an_undo_batch_with_destroy_is_refused_before_anything_runs(
    kma: RunningKma, client: KmipClient
) -> None:
    marker = "undo-" + os.urandom(4).hex()
    before = last_event(kma)
    results = client.batch(
        [
            (Operation.REGISTER, register_payload(os.urandom(32), text_attribute("x-Marker", marker))),
            (Operation.DESTROY, b""),
        ],
        continuation=UNDO,
    )
    assert [r.status for r in results] == [ResultStatus.OPERATION_FAILED] * 2
    assert {r.reason for r in results} == {ResultReason.OPERATION_NOT_SUPPORTED}
    assert "item 2 (destroy) cannot be undone" in (results[0].message or "")
    (refused,) = events(kma, before)  # the refusal, and nothing else: no item ran
    assert refused["operation"] == "kmip.undo" and "nothing was run" in refused["message"]
    assert located(client, "x-Marker", marker) == []


def test_binding_a_tape_cannot_be_undone_so_it_fails_and_the_batch_is_undone(
    kma: RunningKma, client: KmipClient
) -> None:
    results = client.batch(
        [
            (Operation.REGISTER, register_payload(os.urandom(32))),
            (Operation.ADD_ATTRIBUTE, text_attribute("x-Data-Unit", "UNDO01")),
        ],
        continuation=UNDO,
    )
    assert [r.status for r in results] == [ResultStatus.OPERATION_UNDONE, ResultStatus.OPERATION_FAILED]
    assert results[1].reason == ResultReason.OPERATION_NOT_SUPPORTED
    assert "binding key" in (results[1].message or "") and "cannot be undone" in (results[1].message or "")
    uid = results[0].payload.get(Tag.UNIQUE_IDENTIFIER) if results[0].payload is not None else None
    assert isinstance(uid, str) and key_row(kma, uid) == {}


def test_changed_and_deleted_attributes_get_their_values_back(kma: RunningKma, client: KmipClient) -> None:
    uid = str(client.call(Operation.REGISTER, register_payload(os.urandom(32))).get(Tag.UNIQUE_IDENTIFIER))
    key = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)
    for name, value in (("x-Owner", "dba team"), ("x-Rack", "rack 4")):
        client.call(Operation.ADD_ATTRIBUTE, key + text_attribute(name, value))
    client.call(Operation.ADD_ATTRIBUTE, key + attribute("x-Uses", ttlv.integer(Tag.ATTRIBUTE_VALUE, 5)))
    kept = client.get_attributes(uid, ["x-Owner", "x-Rack", "x-Uses"])
    before = last_event(kma)
    results = client.batch(
        [
            (Operation.MODIFY_ATTRIBUTE, key + text_attribute("x-Owner", "storage team")),
            (Operation.DELETE_ATTRIBUTE, key + ttlv.text(Tag.ATTRIBUTE_NAME, "x-Rack")),
            (Operation.MODIFY_ATTRIBUTE, key + attribute("x-Uses", ttlv.integer(Tag.ATTRIBUTE_VALUE, 6))),
            (Operation.DELETE_ATTRIBUTE, key + ttlv.text(Tag.ATTRIBUTE_NAME, "x-Nothing")),  # fails
        ],
        continuation=UNDO,
    )
    assert [r.status for r in results] == [ResultStatus.OPERATION_UNDONE] * 3 + [
        ResultStatus.OPERATION_FAILED
    ]
    assert (
        client.get_attributes(uid, ["x-Owner", "x-Rack", "x-Uses"])
        == kept
        == {
            "x-Owner": "dba team",
            "x-Rack": "rack 4",
            "x-Uses": 5,
        }
    )
    assert [e["message"] for e in events(kma, before, "kmip.undo")] == [
        f"undone: changed attribute 'x-Uses' of key {uid} (its value back)",
        f"undone: deleted attribute 'x-Rack' of key {uid} (put back)",
        f"undone: changed attribute 'x-Owner' of key {uid} (its value back)",
    ]


def test_set_and_adjust_in_kmip_2_get_their_values_back(client: KmipClient) -> None:
    uid = str(client.call(Operation.REGISTER, register_payload(os.urandom(32))).get(Tag.UNIQUE_IDENTIFIER))
    key = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)
    client.call(Operation.ADD_ATTRIBUTE, key + attribute("x-Uses", ttlv.integer(Tag.ATTRIBUTE_VALUE, 5)))
    client.version = (2, 1)

    def vendor(name: str, *value: bytes) -> bytes:  # the client's x-<name> as 2.x names it
        vendored = ttlv.text(Tag.VENDOR_IDENTIFICATION, "x") + ttlv.text(Tag.ATTRIBUTE_NAME, name)
        return (
            ttlv.struct_(Tag.ATTRIBUTE, vendored, *value)
            if value
            else ttlv.struct_(ATTRIBUTE_REFERENCE, vendored)
        )

    results = client.batch(
        [
            (
                Operation.SET_ATTRIBUTE,
                key + ttlv.struct_(NEW_ATTRIBUTE, ttlv.text(Tag.DESCRIPTION, "payroll")),
            ),
            (
                Operation.ADJUST_ATTRIBUTE,
                key + vendor("Uses") + ttlv.enum(Tag.ADJUSTMENT_TYPE, AdjustmentType.INCREMENT),
            ),
            (Operation.CHECK, key + ttlv.integer(Tag.CRYPTOGRAPHIC_USAGE_MASK, UsageMask.WRAP_KEY)),  # fails
        ],
        continuation=UNDO,
    )
    assert [r.status for r in results] == [ResultStatus.OPERATION_UNDONE] * 2 + [
        ResultStatus.OPERATION_FAILED
    ]
    client.version = (1, 4)
    assert client.get_attributes(uid, ["x-Uses", "Description"]) == {"x-Uses": 5}


def test_an_undo_leaves_a_key_another_drive_used_meanwhile(
    kma: RunningKma, client: KmipClient, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Issue 39, item 2: while a batch with Undo runs, another drive of the group reads the key the
    batch activated; the undo then refuses to put it back (the drive holds its material as Active),
    says so in the answer and the trail, and the key stays Active."""
    other = enrolled_demo_agent(kma, tmp_path_factory, "t10k-dal-02")
    created = client.call(
        Operation.CREATE,
        ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + key_template(usage_mask=UsageMask.ENCRYPT),
    )
    uid = str(created.get(Tag.UNIQUE_IDENTIFIER))
    key = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)
    got: list[bytes] = []
    done = threading.Event()

    def other_drive() -> None:  # reads the key as soon as it is Active
        with kmip(other) as drive:
            while not done.is_set() and not got:
                if drive.get_attributes(uid, ["State"])["State"] == 2:
                    got.append(drive.get(uid))

    reader = threading.Thread(target=other_drive)
    reader.start()
    before = last_event(kma)
    try:  # the batch's reads give the other drive time; its second Activate fails: undo
        items = [(Operation.ACTIVATE, key), *[(Operation.GET, key)] * 500, (Operation.ACTIVATE, key)]
        results = client.batch(items, continuation=UNDO)
    finally:
        done.set()
        reader.join()
    assert got, "the other drive read the key while the batch ran"
    assert results[0].status == ResultStatus.OPERATION_FAILED
    assert "could not undo: key" in (results[0].message or "")
    assert "was used by 't10k-dal-02'" in (results[0].message or "")
    assert client.get_attributes(uid, ["State"])["State"] == 2  # Active, as the other drive was told
    trail = [e["message"] for e in events(kma, before, "kmip.undo")]
    assert not any(m.startswith(f"undone: activated key {uid}") for m in trail)  # never both said
    assert [m for m in trail if "was not sent" in m] == [  # the batch's reads, in one event
        f"undone: the material of {uid} was not sent after all (500 Gets)"
    ]
    assert any(m.startswith("refused: key") and "was used by 't10k-dal-02'" in m for m in trail), trail


def test_an_undo_is_refused_once_the_agent_may_no_longer_use_the_key(
    kma: RunningKma, client: KmipClient
) -> None:
    """Issue 39, item 2: a put-back re-checks the agent's access: disabled while its batch runs, the
    agent's activation is not put back by it (the trail and the answer say why)."""
    created = client.call(
        Operation.CREATE,
        ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + key_template(usage_mask=UsageMask.ENCRYPT),
    )
    uid = str(created.get(Tag.UNIQUE_IDENTIFIER))
    key = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)
    operator = kma.client("op")
    done = threading.Event()

    def operator_disables_the_drive() -> None:  # as soon as the batch has activated the key
        while not done.is_set():
            if operator.get_key(uid).activated_at is not None:
                operator.update_agent(AGENT, enabled=False)
                return

    disabling = threading.Thread(target=operator_disables_the_drive)
    disabling.start()
    try:
        items = [(Operation.ACTIVATE, key), *[(Operation.GET, key)] * 500, (Operation.ACTIVATE, key)]
        results = client.batch(items, continuation=UNDO)
    finally:
        done.set()
        disabling.join()
        operator.update_agent(AGENT, enabled=True)
    assert results[0].status == ResultStatus.OPERATION_FAILED
    assert "may no longer use its key group" in (results[0].message or "")
    assert key_row(kma, uid)["activated_at"] is not None
