"""Restore and join through the set-up API (issue 13): a `kma serve` waiting in set-up mode is
restored from a demo KMA's two backup files sent over the set-up connection, or refuses a join with
the join engine's reason; every refusal leaves it waiting with nothing written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kms_client import ApiError, KmsError, Trust
from kms_client.setup import SetupClient
from tests.integration.test_backups import changed, quorum, take_backups
from tests.support.first_setup import written
from tests.support.kma_process import RunningKma
from tests.support.ports import free_port


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("restore-source"), test_clock=False)
    yield kma
    kma.stop()


@pytest.fixture
def waiting(tmp_path: Path) -> Iterator[RunningKma]:
    kma = RunningKma.awaiting_setup(tmp_path)
    yield kma
    kma.stop()


def connect(kma: RunningKma) -> SetupClient:
    return SetupClient(kma.address, Trust.fetch(kma.address), kma.setup["setup_code"])


def pairs(members: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(m["name"], m["passphrase"]) for m in members]


def test_a_waiting_kma_is_restored_from_uploaded_backups_and_serves_the_cluster(
    source: RunningKma, waiting: RunningKma, tmp_path: Path
) -> None:
    core, database = take_backups(source, tmp_path / "backups")
    keys = source.client("op").list_keys().total
    setup = connect(waiting)
    assert {m["mode"] for m in setup.state()["modes"]} == {"new_cluster", "restore", "join"}
    service = f"127.0.0.1:{free_port()}"
    with pytest.raises(ApiError, match="Send the database backup first"):
        setup.restore(waiting.address, service, pairs(quorum(source)))
    setup.upload_backup("core-security-backup", core)
    setup.upload_backup("database-backup", changed(database, database.stat().st_size // 2, tmp_path))
    # each refusal names its reason, and the KMA still waits with nothing written
    with pytest.raises(ApiError, match="changed|damaged"):
        setup.restore(waiting.address, service, pairs(quorum(source)))
    setup.upload_backup("database-backup", database)
    with pytest.raises(ApiError, match="needs 3 key split members' passphrases"):
        setup.restore(waiting.address, service, pairs(quorum(source, 2)))
    wrong = quorum(source)
    wrong[0] = {"name": wrong[0]["name"], "passphrase": "not the passphrase at all"}
    with pytest.raises(ApiError, match=f"passphrase of key split member '{wrong[0]['name']}' is wrong"):
        setup.restore(waiting.address, service, pairs(wrong))
    assert written(waiting) == []

    made = setup.restore(waiting.address, service, pairs(quorum(source)))
    setup.close()
    assert made.ca_fingerprint == source.fingerprint  # the cluster's own CA: agents keep trusting it
    waiting.demo = source.demo
    waiting.wait_ready(set_up=True)
    officer = waiting.client("op")  # the restored users sign in at once: the quorum unlocked it
    # every key restored, the pool's unassigned keys withheld (never issued again) and a fresh pool
    assert officer.list_keys().total >= keys
    backups = officer.get_dashboard().backups
    assert backups is not None and backups.keys_withheld_by_restore > 0
    assert waiting.client("auditor").list_audit_events(operation="backup.restore").items


def test_a_join_is_refused_with_the_reason_and_nothing_written(
    source: RunningKma, waiting: RunningKma
) -> None:
    setup = connect(waiting)
    with pytest.raises(KmsError, match="Cannot reach the KMA at 127.0.0.1:9"):
        setup.join(f"127.0.0.1:{9}", source.fingerprint, "kma-new-1", "a one-time kma passphrase")
    other = "SHA256:" + "00" * 32
    with pytest.raises(KmsError, match="Refused to join"):
        setup.join(source.address, other, "kma-new-1", "a one-time kma passphrase")
    with pytest.raises(KmsError, match="The cluster refused the join"):
        setup.join(source.address, source.fingerprint, "kma-new-1", "a one-time kma passphrase")
    assert written(waiting) == []
    assert setup.state()["state"] == "waiting"


def test_a_waiting_kma_joins_a_real_cluster_node_through_the_set_up_api(tmp_path: Path) -> None:
    from kma.datadir import DataDir
    from tests.integration.test_kma_join_init import add_kma, passphrase_in
    from tests.support.first_node import demo_first_node

    node = demo_first_node(tmp_path / "node")
    waiting = RunningKma.awaiting_setup(tmp_path / "new")
    try:
        code, out, err = add_kma(node, tmp_path, "kma-bos-1", "alice", "bob", "carol")
        assert code == 0, err
        setup = connect(waiting)
        with pytest.raises(KmsError, match="The cluster refused the join"):
            setup.join(node.address, node.fingerprint, "kma-bos-1", "not the one-time passphrase")
        made = setup.join(node.address, node.fingerprint, "kma-bos-1", passphrase_in(out))
        assert made.ca_fingerprint == node.fingerprint
        assert made.management_address.endswith(f":{waiting.address.rpartition(':')[2]}")  # this port
    finally:
        waiting.stop()  # before its Raft node would try to reach the first node's (embedded here)
        node.stop()
    joined = DataDir(waiting.data_dir)
    assert joined.identity().kma_id == "kma-bos-1" and (waiting.data_dir / "cluster" / "node.toml").exists()
    assert not joined.unlock_key.exists()  # it waits locked for a quorum
    assert joined.exposed() == []
