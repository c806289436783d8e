"""Keys' rows carry a MAC (issue 39, item 8): a key moved to another key group or data unit, or
given another state, by a write into the store without the KMA (its data file, or a cluster node's
credential on rqlite's HTTP API) is served to nobody, and the KMA reports it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kma.kmip.client import KmipClient, KmipFailure
from kma.kmip.enums import ResultReason
from tests.integration.test_row_macs import _audit_verify
from tests.support.agents import demo_passphrase, enroll, kmip, service_address
from tests.support.cluster import BINARY, execute, first_node
from tests.support.kma_process import RunningKma
from tests.support.waiting import wait_until

DALLAS, BOSTON = "t10k-dal-02", "t10k-bos-01"


def _group_of(drive: KmipClient, key_id: str) -> str:
    return str(drive.get_attributes(key_id, ["Object Group"])["Object Group"])


def _tamper_events(kma: RunningKma, key_id: str) -> list[str]:
    events = kma.client("auditor").iter_audit_events()
    return [e.message for e in events if e.operation == "security.tamper" and e.subject_id == key_id]


def _two_drives(kma: RunningKma, tmp_path: Path) -> tuple[Path, Path]:
    enroll(kma, DALLAS, tmp_path / "dal", demo_passphrase(kma, DALLAS))
    enroll(kma, BOSTON, tmp_path / "bos", demo_passphrase(kma, BOSTON))
    return tmp_path / "dal", tmp_path / "bos"


def test_a_key_moved_to_another_group_in_the_data_file_is_served_to_nobody(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    dal_dir, bos_dir = _two_drives(fresh_kma, tmp_path)
    with kmip(dal_dir, service_address(fresh_kma)) as dal:
        dallas_key = dal.create_and_activate("E60001")
        kept_key = dal.create_and_activate("E60002")
    with kmip(bos_dir, service_address(fresh_kma)) as bos:
        boston_key = bos.create_and_activate("B60001")
        boston = _group_of(bos, boston_key)

    # The attacker holds the data file (the KMA runs): Dallas's key into Boston's group, onto a
    # Boston tape, and made live again.
    db = sqlite3.connect(fresh_kma.data_dir / "kma.db", timeout=30)
    with db:
        db.execute(
            "UPDATE keys SET key_group_id = ?, data_unit_id = 'B60002', compromised_at = NULL WHERE id = ?",
            (boston, dallas_key),
        )
    db.close()

    with kmip(bos_dir, service_address(fresh_kma)) as bos:
        with pytest.raises(KmipFailure) as refused:
            bos.get(dallas_key)
        assert refused.value.reason == ResultReason.ITEM_NOT_FOUND
        assert dallas_key not in bos.locate(data_unit="B60002")
        assert dallas_key not in bos.locate(group=boston)
        assert len(bos.get(boston_key)) == 32  # the unmodified path still serves
    with kmip(dal_dir, service_address(fresh_kma)) as dal:
        assert len(dal.get(kept_key)) == 32
        with pytest.raises(KmipFailure):
            dal.get(dallas_key)  # not its own any more either: the row is not to be trusted

    told = _tamper_events(fresh_kma, dallas_key)
    assert told and "keys" in told[0] and "MAC that does not verify" in told[0]
    code, said = _audit_verify(fresh_kma)
    assert code == 1 and f"keys '{dallas_key}' has a MAC that does not verify" in said
    assert any("tamper events" in w for w in fresh_kma.client("so").get_dashboard().warnings)


def test_keys_from_before_key_macs_are_sealed_at_the_first_unlock(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    """An upgrade: keys without a MAC keep being served, are sealed once (audited), and from then on
    a key without a MAC is tampered with. An entry of an "older KMA" written into the store without
    the cluster CA does not hold the sealing off (only a signed one would: a rolling upgrade)."""
    dal_dir, bos_dir = _two_drives(fresh_kma, tmp_path)
    with kmip(dal_dir, service_address(fresh_kma)) as dal:
        old_keys = [dal.create_and_activate(f"E7000{i}") for i in range(3)]
    fresh_kma.stop()
    (fresh_kma.data_dir / "keys-sealed").unlink()
    db = sqlite3.connect(fresh_kma.data_dir / "kma.db")
    db.row_factory = sqlite3.Row
    with db:
        db.execute("UPDATE keys SET mac = NULL")
        real = dict(db.execute("SELECT * FROM kmas").fetchone())
        fake = {**real, "id": "kma-older", "name": "An older KMA", "schema_version": 80}
        marks = ", ".join("?" * len(fake))
        db.execute(f"INSERT INTO kmas ({', '.join(fake)}) VALUES ({marks})", tuple(fake.values()))
    db.close()
    fresh_kma.start()

    with kmip(dal_dir, service_address(fresh_kma)) as dal:
        assert all(len(dal.get(k)) == 32 for k in old_keys)
    trail = list(fresh_kma.client("auditor").iter_audit_events())
    events = [e.operation for e in trail]
    assert events.count("security.keys_sealed") >= 1
    assert {e.subject_id for e in trail if e.operation == "security.tamper"} == {"kma-older"}
    code, said = _audit_verify(fresh_kma)
    assert code == 1 and "kma-older" in said and "keys '" not in said  # the fake entry only

    db = sqlite3.connect(fresh_kma.data_dir / "kma.db", timeout=30)
    with db:  # a key written in now without a MAC: the store was sealed, so it is forged
        db.execute("UPDATE keys SET mac = NULL WHERE id = ?", (old_keys[0],))
    db.close()
    with kmip(dal_dir, service_address(fresh_kma)) as dal:
        with pytest.raises(KmipFailure):
            dal.get(old_keys[0])
        assert len(dal.get(old_keys[1])) == 32
    fresh_kma.restart()
    events = [e.operation for e in fresh_kma.client("auditor").iter_audit_events()]
    assert events.count("security.keys_sealed") == 1  # sealed once only: the forged one stays forged
    assert _tamper_events(fresh_kma, old_keys[0])


@pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")
def test_a_key_moved_through_rqlite_with_a_node_credential_is_served_to_nobody(tmp_path: Path) -> None:
    first, _ = first_node(tmp_path / "node")
    try:
        dal_dir, bos_dir = _two_drives(first, tmp_path)
        with kmip(dal_dir, service_address(first)) as dal:
            dallas_key = dal.create_and_activate("E80001")
        with kmip(bos_dir, service_address(first)) as bos:
            boston_key = bos.create_and_activate("B80001")
            boston = _group_of(bos, boston_key)
        execute(first, [["UPDATE keys SET key_group_id = ? WHERE id = ?", boston, dallas_key]])

        def refused_and_reported() -> bool:
            """Once the node reads the forged row (its replica may lag a moment)."""
            with kmip(bos_dir, service_address(first)) as bos:
                with pytest.raises(KmipFailure) as refused:
                    bos.get(dallas_key)
                assert refused.value.reason == ResultReason.ITEM_NOT_FOUND
                assert len(bos.get(boston_key)) == 32
            return bool(_tamper_events(first, dallas_key))

        wait_until(refused_and_reported, 15.0, "the forged key refused and reported")
    finally:
        first.stop()
