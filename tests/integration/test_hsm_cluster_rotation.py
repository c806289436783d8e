"""Master key rotation on a cluster of a software KMA and a KMA whose SoftHSM2 token holds the
cluster's master key (docs/hsm.md#master-key-rotation-with-an-hsm-in-a-cluster), with real `kma serve`
processes, each with its own rqlited (the set-up of tests/integration/test_hsm_cluster.py).

One cluster for the whole story: a Security Officer starts the rotation with a quorum while a drive
keeps writing and reading keys on both KMAs; the HSM KMA puts generation 2 into its token under a
label of its own, and is killed before it records it (its kma.toml cannot be rewritten: a directory
stands where the new copy is written); restarted and unlocked by a quorum, it finishes: one key object
of generation 2, recorded, the rotation ended, the old object destroyed (audited), kma.toml naming the
new label; restarted again, a quorum unlock finds it; every key reads the same bytes on both KMAs.
A second rotation, run through the HSM KMA, goes from `...-g2` to `...-g3` alike.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from kms_client import KmsClient
from tests.integration.test_hsm_cluster import (
    JOINING,
    TOKEN_CHECK,
    _create,
    _get,
    hsm_kma_joined,
    in_token,
)
from tests.integration.test_quorum import creds
from tests.support.agents import kmip, service_address
from tests.support.cluster import BINARY, first_node, replica
from tests.support.kma_process import RunningKma
from tests.support.softhsm import SoftHsm, softhsm
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")

MEMBERS = ("alice", "bob", "carol")
JOINED_LABEL = f"kma-master-{JOINING}"
NEW_LABEL = f"{JOINED_LABEL}-g2"

LABELS = """
import json, sys
import pkcs11
from pkcs11 import Attribute, ObjectClass
with pkcs11.lib(sys.argv[1]).get_token(token_label=sys.argv[2]).open(user_pin=sys.argv[3]) as session:
    print(json.dumps(sorted(k.label for k in session.get_objects({Attribute.CLASS: ObjectClass.SECRET_KEY}))))
"""


@pytest.fixture
def hsm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SoftHsm:
    made = softhsm(tmp_path, label="kma-boston")
    monkeypatch.setenv("SOFTHSM2_CONF", str(made.conf))  # every `kma` process this test starts
    return made


def token_labels(hsm: SoftHsm) -> list[str]:
    """The labels of the key objects in the HSM KMA's token, as another process of its user sees them."""
    return list(json.loads(in_token(hsm, hsm.label, LABELS, "")))


class Drive:
    """A drive writing and reading keys on one KMA until stopped: every key it wrote before, and
    those it writes meanwhile, must read the same bytes each time."""

    def __init__(self, agent_dir: Path, kma: RunningKma, written: dict[str, bytes], prefix: str) -> None:
        self.written = dict(written)
        self.during: dict[str, bytes] = {}
        self.failures: list[BaseException] = []
        self._stop = threading.Event()
        address = service_address(kma)
        self._thread = threading.Thread(target=self._run, args=(agent_dir, address, prefix), daemon=True)
        self._thread.start()

    def _run(self, agent_dir: Path, address: str, prefix: str) -> None:
        n = 0
        with kmip(agent_dir, address) as agent:
            while not self._stop.is_set():
                try:
                    uid = agent.create_and_activate(f"{prefix}{n:04d}")
                    self.during[uid] = agent.get(uid)
                    for old, material in {**self.written, **self.during}.items():
                        assert agent.get(old) == material
                except BaseException as exc:
                    self.failures.append(exc)
                    return
                n += 1
                time.sleep(0.1)  # a drive's pace: the key pool keeps up

    def halt(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def stop(self) -> dict[str, bytes]:
        """Stop; what it wrote meanwhile (it must have written and failed nothing)."""
        self.halt()
        assert not self.failures, self.failures
        assert self.during, "the drive wrote nothing while the rotation ran"
        return self.during


def unlock(kma: RunningKma, first: RunningKma) -> None:
    unlocked = kma.client("so").unlock_kma(JOINING, credentials=creds(first, *MEMBERS))
    assert not unlocked.locked


def recorded_generations(kma: RunningKma) -> dict[str, int]:
    with replica(kma) as db:
        return {
            r[0]: int(r[1]) for r in db.execute("SELECT id, master_generation FROM kmas WHERE witness = 0")
        }


def destroyed(auditor: KmsClient, label: str) -> bool:
    """Whether the audit trail says the HSM KMA destroyed its key object `label`."""
    events = auditor.list_audit_events(operation="kma.hsm_master_key_destroyed").items
    return any(f"destroyed the key object '{label}'" in e.message for e in events)


def rotated(so: KmsClient, generation: int) -> bool:
    state = so.get_master_key()
    return state.generation == generation and not state.rotating


def test_a_cluster_with_an_hsm_kma_rotates_its_master_key_into_the_token(
    tmp_path: Path, hsm: SoftHsm
) -> None:
    first, _ = first_node(tmp_path / "a")
    second: RunningKma | None = None
    drives: list[Drive] = []
    try:
        # Given a software KMA and a KMA whose token holds the cluster's master key, each serving keys
        agent_dir, second = hsm_kma_joined(first, tmp_path, hsm)
        new_dir = second.data_dir
        unlock(second, first)
        written: dict[str, bytes] = {}
        with kmip(agent_dir, service_address(first)) as agent:
            uid = agent.create_and_activate("B00001")
            written[uid] = agent.get(uid)
        with kmip(agent_dir, service_address(second)) as agent:
            uid = wait_until(lambda: _create(agent, "B00002"), 30.0, "the HSM KMA's key pool")
            written[uid] = agent.get(uid)
            wait_until(lambda: all(_get(agent, k) for k in written), 15.0, "the first KMA's key here")
        assert token_labels(hsm) == [JOINED_LABEL]
        # (the HSM KMA will be killed between putting the new generation in its token and recording
        # it: kma.toml cannot be rewritten while a directory stands where its new copy is written)
        blocker = new_dir / "kma.toml.new"
        blocker.mkdir()

        # When a Security Officer rotates the master key, with a quorum, while a drive keeps working
        drives += [Drive(agent_dir, first, written, "D1"), Drive(agent_dir, second, written, "D2")]
        so = first.client("so")
        assert so.rotate_master_key(credentials=creds(first, *MEMBERS)).state == "executed"

        # Then the HSM KMA puts generation 2 into its token, under a label of its own, and serves
        # with it; killed before it recorded it, the rotation waits for it
        # (its log says it could not rewrite kma.toml: it took generation 2 up and no longer writes
        # the token; the token is read only then, as SoftHSM2 shares a token between processes badly)
        taken_up = wait_until(lambda: "kma.toml.new" in second.log_text(), 60.0, "generation 2 taken up")
        assert taken_up and token_labels(hsm) == [JOINED_LABEL, NEW_LABEL]
        time.sleep(2)  # the drive on the HSM KMA goes on with generation 2 for a while
        during = drives[1].stop()
        second.kill()
        assert recorded_generations(first)[JOINING] == 1
        state = so.get_master_key()
        assert state.rotating and state.rotation is not None and JOINING in state.rotation.kmas_waiting

        # Restarted and unlocked by a quorum, it finishes: no second key object, generation 2 recorded
        blocker.rmdir()
        second.start()
        assert second.client().get_status().locked
        unlock(second, first)
        wait_until(lambda: rotated(so, 2), 120, interval=0.5, what="the rotation to end")
        during |= drives[0].stop()
        assert recorded_generations(first) == {"kma-dal-1": 2, JOINING: 2}

        # ... and once the rotation has ended, the old key object is destroyed, audited
        auditor = first.client("auditor")
        wait_until(lambda: destroyed(auditor, JOINED_LABEL), 30.0, "the old key object destroyed")
        wait_until(
            lambda: "previous_key_label" not in (new_dir / "kma.toml").read_text(), 15.0, "kma.toml settled"
        )
        assert token_labels(hsm) == [NEW_LABEL]
        config = (new_dir / "kma.toml").read_text()
        assert f'key_label = "{NEW_LABEL}"' in config
        # The new object is as sealed as the one the join made
        checked = json.loads(in_token(hsm, hsm.label, TOKEN_CHECK, NEW_LABEL))
        assert (checked["sensitive"], checked["extractable"], checked["value"]) == (True, False, "refused")

        # Restarted again, a quorum unlock finds generation 2 under its new label; keys written before,
        # during and after the rotation read the same bytes on both KMAs
        second.restart()
        unlock(second, first)
        assert second.client().get_status().master_key.startswith("pkcs11: token 'kma-boston'")
        assert second.client("so").get_master_key().generation == 2
        every = {**written, **during}
        with kmip(agent_dir, service_address(second)) as agent:
            after = wait_until(lambda: _create(agent, "A00001"), 30.0, "the HSM KMA's key pool")
            every[after] = agent.get(after)
            assert {uid: agent.get(uid) for uid in every} == every
        with kmip(agent_dir, service_address(first)) as agent:
            wait_until(lambda: _get(agent, after) is not None, 15.0, "the HSM KMA's new key on the first")
            made = agent.create_and_activate("A00002")
            every[made] = agent.get(made)
            assert {uid: agent.get(uid) for uid in every} == every
        with kmip(agent_dir, service_address(second)) as agent:
            assert wait_until(lambda: _get(agent, made), 15.0, "the first KMA's new key here") == every[made]

        # A rotation run through the HSM KMA itself takes generation 3 into its token at once; once it
        # has ended, only generation 3's object is left, and every key still reads the same
        hsm_so = second.client("so")
        assert hsm_so.rotate_master_key(credentials=creds(first, *MEMBERS)).state == "executed"
        wait_until(lambda: rotated(hsm_so, 3), 120, interval=0.5, what="the second rotation to end")
        wait_until(lambda: destroyed(auditor, NEW_LABEL), 30.0, "generation 2's key object destroyed")
        assert token_labels(hsm) == [f"{JOINED_LABEL}-g3"]
        for kma in (first, second):
            with kmip(agent_dir, service_address(kma)) as agent:
                assert {uid: agent.get(uid) for uid in every} == every
    finally:
        for drive in drives:
            drive.halt()
        if second is not None:
            second.stop()
        first.stop()
