"""Acceptance: a KMIP client in another language, written by others, runs a key from Create to
Destroy as an enrolled agent: NLnet Labs' Rust client (kmip-protocol, KMIP 1.0) and Cosmian's
Rust KMIP types and TTLV codec (cosmian_kmip, KMIP 1.4, 2.0 and 2.1). What it reads is checked
against what PyKMIP reads for the same key, and against the KMA's own records."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kmip.core import enums
from kmip.pie.client import ProxyKmipClient
from kmip.pie.exceptions import KmipOperationFailure

from tests.support.agents import (
    enrolled_demo_agent,
    events,
    general_keys_demo,
    key_row,
    last_event,
    service_address,
)
from tests.support.kma_process import RunningKma
from tests.support.rust_peer import built_peer, run_peer

AGENT = "t10k-dal-01"


@pytest.fixture(scope="module")
def peer() -> Path:
    return built_peer()


@pytest.fixture(scope="module")
def kma(peer: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = general_keys_demo(tmp_path_factory, "kmip-peer-rust")
    yield kma
    kma.stop()


@pytest.fixture(scope="module")
def agent_dir(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return enrolled_demo_agent(kma, tmp_path_factory, AGENT)


@pytest.mark.parametrize("version", ["1.0", "1.4", "2.0", "2.1"])
def test_rust_client_runs_a_key_from_create_to_destroy(
    kma: RunningKma, agent_dir: Path, peer: Path, version: str
) -> None:
    name = f"rust-kmip-{version}"
    address = service_address(kma)
    before = last_event(kma)

    # When the Rust client creates, activates, fetches and looks up a key
    started = run_peer(peer, version, address, agent_dir, "start", name)
    assert all(step["ok"] for step in started.values()), started
    assert list(started) == ["create", "activate", "get", "locate"]
    uid = started["create"]["id"]
    assert started["get"]["id"] == uid and len(started["get"]["key_hex"]) == 64  # AES-256
    assert started["locate"]["ids"] == [uid]

    # Then PyKMIP, another client of the same agent, sees the same key, active, under that name
    with ProxyKmipClient(config_file=str(agent_dir / "pykmip.conf")) as pykmip:
        assert pykmip.get(uid).value == bytes.fromhex(started["get"]["key_hex"])
        _, attrs = pykmip.get_attributes(uid, ["State", "Name", "Cryptographic Length"])
        by_name = {a.attribute_name.value: a.attribute_value for a in attrs}
        assert by_name["State"].value == enums.State.ACTIVE
        assert by_name["Name"].name_value.value == name
        assert by_name["Cryptographic Length"].value == 256

        # When the Rust client revokes and destroys it, Then nobody can read it any more
        retired = run_peer(peer, version, address, agent_dir, "retire", uid)
        assert [(s, r["ok"]) for s, r in retired.items()] == [
            ("revoke", True),
            ("destroy", True),
            ("get_after_destroy", False),
        ], retired
        # in words the client's version has: Item Not Found in 1.0 (Key Value Not Present came
        # in 1.2), Key Value Not Present (0x13) in 1.4, Object Destroyed (0x36) in 2.x
        refusal = retired["get_after_destroy"]["error"]
        assert f"{uid} was destroyed" in refusal
        assert {"1.0": "Item not found", "1.4": "Reason 0x13"}.get(version, "Reason 0x36") in refusal
        with pytest.raises(KmipOperationFailure) as refused:
            pykmip.get(uid)
        assert refused.value.reason == enums.ResultReason.KEY_VALUE_NOT_PRESENT

    row = key_row(kma, uid)
    assert row["destroyed_at"] is not None and row["material_wrapped"] is None
    assert row["agent_id"] == AGENT
    # And the audit trail names the agent for every step, the key for the create and destroy
    done = [
        (e["operation"], e["subject_id"])
        for e in events(kma, before)
        if e["entity_id"] == AGENT and e["condition"] == "success"
    ]
    for operation in (
        "kmip.create",
        "kmip.activate",
        "kmip.get",
        "kmip.locate",
        "kmip.revoke",
        "kmip.destroy",
    ):
        assert operation in {o for o, _ in done}, operation
    assert ("kmip.create", uid) in done and ("kmip.destroy", uid) in done
