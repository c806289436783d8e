"""Acceptance: the OASIS KMIP Profiles test cases (tests/support/kmip_vectors.py) against a real
`kma serve` over TLS, one test per test case, as a tape library's enrolled agent.

The key policy of the agent's group keeps general keys (the profiles are a generic client's:
free-text names, every AES size, secret data and opaque objects), lets agents revoke and destroy
(the profiles' life cycles end in Destroy) and allows import (Register). A test case that
continues another one's objects (TL-M-3 finds the key TL-M-2 made) runs that one first if it has
not run yet.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kma.kmip import ttlv
from kma.kmip.client import KmipClient, KmipFailure, attribute
from kma.kmip.enums import (
    CryptographicAlgorithm,
    InteropFunction,
    ObjectType,
    Operation,
    ResultReason,
    ResultStatus,
    Tag,
)
from kma.kmip.v2 import ATTRIBUTE_REFERENCE, ATTRIBUTES
from tests.support.agents import enrolled_demo_agent, events, general_keys_demo, kmip, last_event
from tests.support.kma_process import RunningKma
from tests.support.kmip_vectors import VECTORS, Bindings, Vector, vectors

AGENT = "t10k-dal-01"
# 3DES keys (SKFF-M-4, -8, -12): NIST withdrew 3DES, so this KMA refuses them, and says so.
REFUSED = [v for v in vectors("SKFF") if re.match(r"SKFF-M-(4|8|12)-", v.name)]
SERVED = [v for v in vectors("TL", "SKLC", "SKFF", "OMOS", "BL", "QS") if v not in REFUSED]
# Test cases this KMA does not pass, and why: each an expected, strict failure (one that starts
# passing must leave this list). docs/api.md's profile table says the same.
NOT_OFFERED: dict[str, str] = {}
CONTINUES = {"TL-M-3": "TL-M-2"}  # a test case -> the one whose objects it works on


class Runner:
    def __init__(self, kma: RunningKma, client: KmipClient) -> None:
        self.kma = kma
        self.client = client
        self.done: set[str] = set()
        self.server_made: set[str] = set()

    def run(self, vector: Vector) -> None:
        stem, _, version = vector.name.rpartition("-")
        before = CONTINUES.get(stem)
        if before is not None and f"{before}-{version}" not in self.done:
            self.run(Vector(vector.path.with_name(f"{before}-{version}.xml")))
        vector.run(self.client, Bindings(), self.server_made)
        self.done.add(vector.name)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    kma = general_keys_demo(tmp_path_factory, "kmip-vectors")
    try:
        agent_dir: Path = enrolled_demo_agent(kma, tmp_path_factory, AGENT)
        with kmip(agent_dir) as client:
            yield Runner(kma, client)
    finally:
        kma.stop()


def cases(found: list[Vector]) -> list[Any]:
    return [
        pytest.param(v, marks=pytest.mark.xfail(strict=True, reason=NOT_OFFERED[v.name]), id=v.name)
        if v.name in NOT_OFFERED
        else pytest.param(v, id=v.name)
        for v in found
    ]


@pytest.mark.parametrize("vector", cases(SERVED))
def test_profile_test_case(runner: Runner, vector: Vector) -> None:
    runner.run(vector)


@pytest.mark.parametrize("vector", cases(REFUSED))
def test_3des_is_refused_and_said_why(runner: Runner, vector: Vector) -> None:
    (item,) = vector.first_answer(runner.client).all(Tag.BATCH_ITEM)
    assert item.get(Tag.RESULT_STATUS) == ResultStatus.OPERATION_FAILED
    assert item.get(Tag.RESULT_REASON) == ResultReason.INVALID_FIELD
    assert "3DES, which NIST withdrew" in item.get(Tag.RESULT_MESSAGE)


def test_log_and_interop_are_written_in_the_audit_trail(runner: Runner) -> None:
    """A test case's Begin and End and its client's Log Message are audit events, the agent's;
    Interop Reset (forget the test case's objects) is refused, and that too is recorded."""
    before = last_event(runner.kma)
    runner.run(Vector(VECTORS / "2.1" / "mandatory" / "BL-M-1-21.xml"))
    said = [
        (e["operation"], e["message"])
        for e in events(runner.kma, before)
        if e["operation"] in ("kmip.interop", "kmip.log")
    ]
    assert said == [
        ("kmip.interop", f"agent '{AGENT}' began test case 'BL-M-1-21'"),
        ("kmip.log", f"agent '{AGENT}' logged: Registered a symmetric key."),
        ("kmip.interop", f"agent '{AGENT}' ended test case 'BL-M-1-21'"),
    ]
    reset = ttlv.enum(Tag.INTEROP_FUNCTION, InteropFunction.RESET) + ttlv.text(
        Tag.INTEROP_IDENTIFIER, "BL-M-1-21"
    )
    with pytest.raises(KmipFailure) as unknown:  # KMIP 1.4 has no Interop
        runner.client.call(Operation.INTEROP, reset)
    assert unknown.value.reason == ResultReason.OPERATION_NOT_SUPPORTED
    runner.client.version = (2, 1)
    try:
        with pytest.raises(KmipFailure) as refused:
            runner.client.call(Operation.INTEROP, reset)
    finally:
        runner.client.version = (1, 4)
    assert refused.value.reason == ResultReason.FEATURE_NOT_SUPPORTED
    (event,) = events(runner.kma, before, "kmip.interop")[-1:]
    assert event["condition"] == "error" and "Reset is not offered" in event["message"]


def quantum_safe_create(bits: int) -> bytes:
    value = Tag.ATTRIBUTE_VALUE
    return ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + ttlv.struct_(
        Tag.TEMPLATE_ATTRIBUTE,
        attribute("Cryptographic Algorithm", ttlv.enum(value, CryptographicAlgorithm.AES)),
        attribute("Cryptographic Length", ttlv.integer(value, bits)),
        attribute("Quantum Safe", ttlv.boolean(value, True)),
    )


def quantum_safe(client: KmipClient, uid: str) -> bool | None:
    """The key's Quantum Safe as a KMIP 2.1 client reads it (KMIP 1.x has no such attribute)."""
    client.version = (2, 1)
    try:
        asked = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + ttlv.enum(ATTRIBUTE_REFERENCE, Tag.QUANTUM_SAFE)
        held = client.call(Operation.GET_ATTRIBUTES, asked).find(ATTRIBUTES)
    finally:
        client.version = (1, 4)
    return None if held is None else held.get(Tag.QUANTUM_SAFE)


def test_a_quantum_safe_key_is_aes_256(runner: Runner) -> None:
    """Quantum Safe = True: an AES-128 key is refused, and the refusal recorded; an AES-256 key is
    made and keeps the promise among its attributes (a client cannot add it to a key later); a
    KMIP 1.4 client, whose version has no Quantum Safe, is not answered with it."""
    before = last_event(runner.kma)
    with pytest.raises(KmipFailure) as refused:
        runner.client.call(Operation.CREATE, quantum_safe_create(128))
    assert refused.value.reason == ResultReason.GENERAL_FAILURE
    assert "AES-128 key is not quantum safe" in refused.value.message
    (event,) = events(runner.kma, before, "kmip.create")
    assert event["condition"] == "error" and "not quantum safe" in event["message"]

    uid = runner.client.call(Operation.CREATE, quantum_safe_create(256)).get(Tag.UNIQUE_IDENTIFIER)
    assert quantum_safe(runner.client, uid) is True
    assert "Quantum Safe" not in runner.client.get_attributes(uid)
    with pytest.raises(KmipFailure) as kept:
        delete = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + ttlv.text(Tag.ATTRIBUTE_NAME, "Quantum Safe")
        runner.client.call(Operation.DELETE_ATTRIBUTE, delete)
    assert kept.value.reason == ResultReason.PERMISSION_DENIED
    assert quantum_safe(runner.client, uid) is True
    plain = runner.client.create()
    with pytest.raises(KmipFailure) as read_only:
        runner.client.call(
            Operation.ADD_ATTRIBUTE,
            ttlv.text(Tag.UNIQUE_IDENTIFIER, plain)
            + attribute("Quantum Safe", ttlv.boolean(Tag.ATTRIBUTE_VALUE, True)),
        )
    assert read_only.value.reason == ResultReason.PERMISSION_DENIED


def test_a_description_has_one_value_and_finds_its_key(runner: Runner) -> None:
    uid = runner.client.create()
    described = attribute("Description", ttlv.text(Tag.ATTRIBUTE_VALUE, "payroll database, site B"))
    runner.client.call(Operation.ADD_ATTRIBUTE, ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + described)
    again = attribute("Description", ttlv.text(Tag.ATTRIBUTE_VALUE, "another"))
    with pytest.raises(KmipFailure) as refused:  # KMIP 1.4 has no Attribute Single Valued reason
        runner.client.call(Operation.ADD_ATTRIBUTE, ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + again)
    assert refused.value.reason == ResultReason.ILLEGAL_OPERATION
    assert runner.client.get_attributes(uid, ["Description"]) == {"Description": "payroll database, site B"}
    found = runner.client.call(Operation.LOCATE, described).all(Tag.UNIQUE_IDENTIFIER)
    assert [i.value for i in found] == [uid]
