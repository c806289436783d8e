"""Master key rotation on a real KMA (docs/backups.md#master-key-rotation): a drive keeps creating and
reading keys while every blob is re-wrapped, and reads the same bytes after; a KMA killed halfway
finishes after its restart; and after a key split change that rotates the master key, the core
security backup from before opens nothing of a copy of the store taken after.

Also: database backups across a rotation open only with a core security backup of their
generation; a cluster of three goes through a rotation while its Raft leader is killed; a KMA with
its master key in an HSM rotates its unlock key.

One demo KMA for the first tests, its pool grown so that a rotation takes a while; each rotates from
whatever generation the one before left.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.backup.fileformat import read_core_security_backup
from kma.crypto import CryptoError, IntegrityError
from kma.crypto.generations import MasterKeys, generation_of, header
from kma.services.quorum.key_split import Credential
from kma.setup.restore import open_master
from kma.vault import unwrap_master_with_root
from kms_client import KmsClient
from tests.integration.test_backups import cli, quorum, refused, restores
from tests.integration.test_hsm import drive as hsm_drive
from tests.integration.test_key_split_change import NEW, enrol_all
from tests.integration.test_metrics import scrape
from tests.integration.test_quorum import creds
from tests.support.agents import enrolled_demo_agent, kmip, service_address
from tests.support.alert_receivers import WebhookReceiver
from tests.support.cluster import replica, three_kmas
from tests.support.kma_process import RunningKma, read_only_db, ready_pool, run_kma
from tests.support.softhsm import softhsm
from tests.support.waiting import wait_until

MEMBERS = ("alice", "bob", "carol")


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("rotation"))
    try:
        ready_pool(kma, 3000)  # blobs enough that a rotation is still under way when it is cut short
        yield kma
    finally:
        kma.stop()


@pytest.fixture(scope="module")
def drive(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return enrolled_demo_agent(kma, tmp_path_factory, "t10k-dal-01")


def rotated(so: KmsClient, generation: int) -> bool:
    state = so.get_master_key()
    return state.generation == generation and not state.rotating


def blobs_by_generation(kma: RunningKma) -> dict[int, int]:
    """How many stored keys' blobs are of each master key generation (as each blob says)."""
    counts: dict[int, int] = {}
    with read_only_db(kma) as db:
        for (blob,) in db.execute("SELECT material_wrapped FROM keys WHERE material_wrapped IS NOT NULL"):
            generation = generation_of(bytes(blob))
            counts[generation] = counts.get(generation, 0) + 1
    return counts


def test_a_drive_keeps_writing_and_reading_through_a_rotation(kma: RunningKma, drive: Path) -> None:
    so = kma.client("so")
    start = so.get_master_key().generation
    hook = WebhookReceiver("a webhook's secret")  # not started: its channel's secrets are what matter
    settings = {"url": hook.url, "ca_pem": hook.tls.ca_pem}
    channel = so.add_alert_channel("SOC webhook", "webhook", settings, {"secret": "a webhook's secret"}).id
    with kmip(drive, service_address(kma)) as client:
        before = {client.create_and_activate(f"R{n:05d}"): None for n in range(5)}
        written = {uid: client.get(uid) for uid in before}
    during: dict[str, bytes] = {}
    failures: list[BaseException] = []
    stop = threading.Event()

    def keep_working() -> None:
        with kmip(drive, service_address(kma)) as client:
            n = 100
            while not stop.is_set():
                try:
                    uid = client.create_and_activate(f"R{n:05d}")
                    during[uid] = client.get(uid)
                    for old, material in written.items():
                        assert client.get(old) == material
                except BaseException as exc:
                    failures.append(exc)
                    return
                n += 1

    worker = threading.Thread(target=keep_working)
    worker.start()
    try:
        op = so.rotate_master_key(credentials=creds(kma, *MEMBERS))
        assert op.state == "executed"
        wait_until(lambda: so.get_master_key().rotating or rotated(so, start + 1), 30, what="the rotation")
        wait_until(lambda: rotated(so, start + 1), 120, interval=0.2, what="the rotation to end")
    finally:
        stop.set()
        worker.join(60)
    assert not failures, failures
    assert during, "the drive wrote nothing while the rotation ran"

    # Same bytes after, for keys written before and during; every blob of the new generation.
    with kmip(drive, service_address(kma)) as client:
        for uid, material in {**written, **during}.items():
            assert client.get(uid) == material
    assert set(blobs_by_generation(kma)) == {start + 1}
    with read_only_db(kma) as db:  # an alert channel's secrets are re-wrapped too
        row = db.execute("SELECT secrets_wrapped FROM alert_channels WHERE id = ?", (channel,)).fetchone()
    assert generation_of(bytes(row[0])) == start + 1
    state = so.get_master_key()
    assert state.rotation is not None and state.rotation.percent == 100 and state.rotation.blobs_done > 3000
    with read_only_db(kma) as db:
        assert db.execute("SELECT count(*) FROM master_key_generations").fetchone()[0] == 0
    auditor = kma.client("auditor")
    [ended] = auditor.list_audit_events(operation="cluster.master_key_rotated", limit=1).items
    assert f"generation {start} is destroyed" in ended.message
    metrics = scrape(kma, so.token).text
    assert f"kma_master_key_generation {start + 1}.0" in metrics and "kma_master_key_rotating 0.0" in metrics
    # A new core security backup is asked for, as after a key split change.
    assert not so.core_security_backup_status().up_to_date
    assert any("core security backup" in w for w in so.get_dashboard().warnings)


def test_a_kma_killed_halfway_finishes_the_rotation_after_its_restart(kma: RunningKma, drive: Path) -> None:
    so = kma.client("so")
    start = so.get_master_key().generation
    with kmip(drive, service_address(kma)) as client:
        uid = client.create_and_activate("K00001")
        material = client.get(uid)
    so.rotate_master_key(credentials=creds(kma, *MEMBERS))

    def under_way() -> bool:
        rotation = so.get_master_key().rotation
        return rotation is not None and rotation.blobs_done > 100  # past the few blobs before the keys

    wait_until(under_way, 30, interval=0.02, what="the re-wrap to begin")
    kma.kill()
    mixed = blobs_by_generation(kma)
    assert set(mixed) == {start, start + 1}, "the rotation was not under way when killed"
    status = run_kma("status", "--data-dir", str(kma.data_dir)).stdout
    assert f"master key rotation to generation {start + 1}: " in status and "blobs re-wrapped" in status

    kma.start(int(kma.address.rsplit(":", 1)[1]))  # autonomous unlock: it holds the old generation
    so = kma.client("so")
    wait_until(
        lambda: rotated(so, start + 1), 120, interval=0.2, what="the rotation to end after the restart"
    )
    assert set(blobs_by_generation(kma)) == {start + 1}
    with kmip(drive, service_address(kma)) as client:  # a restarted KMA listens on another port here
        assert client.get(uid) == material
    # Its autonomous unlock blob is of the new generation: a restart now still unlocks it.
    kma.restart()
    assert not kma.client("so").get_status().locked
    with kmip(drive, service_address(kma)) as client:
        assert client.get(uid) == material


def test_backups_across_a_rotation_open_with_a_core_backup_of_their_generation_only(
    kma: RunningKma, tmp_path: Path
) -> None:
    so = kma.client("so")
    start = so.get_master_key().generation
    core_before, db_before = tmp_path / "before.kmacore", tmp_path / "before.kmabackup"
    so.take_core_security_backup(core_before)
    cli(kma, "backup", "backup", "create", "--out", str(db_before))
    so.rotate_master_key(credentials=creds(kma, *MEMBERS))
    wait_until(lambda: rotated(so, start + 1), 120, interval=0.2, what="the rotation to end")
    assert "wait for it" in so.core_security_backup_status().message  # database backups wait for a new one
    core_after, db_after = tmp_path / "after.kmacore", tmp_path / "after.kmabackup"
    so.take_core_security_backup(core_after)
    cli(kma, "backup", "backup", "create", "--out", str(db_after))

    members = quorum(kma)
    assert "or a master key rotation" in refused(tmp_path / "a", core_before, db_after, members)
    assert "a master key rotation came between them" in refused(
        tmp_path / "b", core_after, db_before, members
    )
    restores(tmp_path / "c", core_after, db_after, members)


def copy_store(kma: RunningKma, dest: Path) -> Path:
    """A copy of the store as it is now, as someone who reads the disk would take it."""
    with read_only_db(kma) as db:
        target = sqlite3.connect(dest)
        db.backup(target)
        target.close()
    return dest


def open_copy_with(core: Path, members: list[tuple[str, str]], copy: Path) -> dict[str, int]:
    """What an old core security backup and its members' passphrases open in a copy of the store."""
    opened = read_core_security_backup(core)
    master = MasterKeys(open_master(opened, [Credential(n, p) for n, p in members]), opened.master_generation)
    root_opens_master = False
    db = sqlite3.connect(copy)
    try:
        blobs = db.execute(
            "SELECT id, material_wrapped FROM keys WHERE material_wrapped IS NOT NULL"
        ).fetchall()
        opened = 0
        for key_id, blob in blobs:
            try:
                master.unwrap(f"key:{key_id}", bytes(blob))
                opened += 1
            except CryptoError:
                pass
        try:
            master.unwrap(
                "cluster-ca-key", bytes(db.execute("SELECT ca_key_wrapped FROM cluster").fetchone()[0])
            )
            ca = 1
        except IntegrityError:
            ca = 0
        wrapped = bytes(db.execute("SELECT master_wrapped_by_root FROM cluster").fetchone()[0])
    finally:
        db.close()
    shares = read_core_security_backup(core)
    try:
        from kma.crypto import combine_shares, open_share

        root = combine_shares(
            [open_share(shares.sealed_shares[n], n, p) for n, p in members][: shares.threshold]
        )
        unwrap_master_with_root(root, wrapped)
        root_opens_master = True
    except CryptoError:
        pass
    return {"keys": opened, "of": len(blobs), "ca": ca, "master": int(root_opens_master)}


def test_after_a_split_change_with_rotation_the_old_core_backup_opens_nothing_new(
    kma: RunningKma, tmp_path: Path
) -> None:
    so = kma.client("so")
    start = so.get_master_key().generation
    old_core = tmp_path / "before.kmacore"
    so.take_core_security_backup(old_core)
    old_members = creds(kma, *MEMBERS)
    copy_before = copy_store(kma, tmp_path / "before.db")
    before = open_copy_with(old_core, old_members, copy_before)  # today it opens every key, the CA key
    assert before == {"keys": before["of"], "of": before["of"], "ca": 1, "master": 1}

    # One ceremony: the new members enrol, the old quorum approves, the master key rotates with it.
    change = so.change_key_split(2, [n for n, _ in NEW], credentials=old_members, rotate_master_key=True)
    assert "rotate the master key" in change.op.summary
    op = enrol_all(kma, change)
    assert op.state == "executed", op
    wait_until(lambda: rotated(so, start + 1), 120, interval=0.2, what="the rotation to end")

    opened = open_copy_with(old_core, old_members, copy_store(kma, tmp_path / "after.db"))
    assert opened == {"keys": 0, "of": opened["of"], "ca": 0, "master": 0}
    assert opened["of"] > 3000
    # The new members' quorum is what opens it now.
    assert so.get_master_key().generation == start + 1


@pytest.mark.slow
def test_on_a_cluster_every_kma_takes_the_new_generation_through_a_leader_change(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with three_kmas(tmp_path) as kmas:
        topology = kmas[0].client("co").get_topology()
        leader_address, leader_id = next((k.management_address, k.id) for k in topology.kmas if k.leader)
        leader = next(k for k in kmas if k.address == leader_address)
        follower = next(k for k in kmas if k is not leader)
        drive = enrolled_demo_agent(follower, tmp_path_factory, "t10k-dal-01")
        with kmip(drive, service_address(follower)) as client:
            written = {
                uid: client.get(uid) for uid in (client.create_and_activate(f"C{n:05d}") for n in range(3))
            }

        # When the rotation runs through a follower and the Raft leader is killed halfway
        so = follower.client("so")
        so.rotate_master_key(credentials=creds(follower, *MEMBERS))
        # (at once, before the third KMA's next look at the store: a key the follower makes under
        # the new generation is served there, and its users, sealed again, sign in there)
        third = next(k for k in kmas if k is not leader and k is not follower)
        with kmip(drive, service_address(follower)) as client:
            fresh = client.create_and_activate("C00009")
            written[fresh] = client.get(fresh)
        # (the follower ships its new key to the cluster in the background, tens of milliseconds
        # later: the third KMA serves it once its replica holds it)
        wait_until(lambda: _in_replica(third, fresh), 10, interval=0.01, what="the new key on the third KMA")
        with kmip(drive, service_address(third)) as client:
            assert client.get(fresh) == written[fresh]
        assert third.client("so").get_status().master_key_generation == 2
        wait_until(
            lambda: so.get_master_key().rotation.blobs_done > 100, 60, interval=0.05, what="the re-wrap"
        )
        leader.kill()

        # Then the others go on: every blob is re-wrapped while it is down (the rotation then waits
        # for it, unless it took the new generation up before it was killed)
        def old_blobs() -> int:
            with replica(follower) as db:
                return int(
                    db.execute(
                        "SELECT count(*) FROM keys WHERE material_wrapped IS NOT NULL "
                        "AND substr(material_wrapped, 1, 5) IS NOT ?",
                        (header(2),),
                    ).fetchone()[0]
                )

        wait_until(
            lambda: old_blobs() == 0, 120, interval=0.5, what="every key re-wrapped without the leader"
        )

        # and every KMA still up takes the new generation (at its next watch round): only the
        # killed one is waited for
        def waiting_only_for_the_killed_one() -> bool:
            state = so.get_master_key()
            return not state.rotating or tuple(state.rotation.kmas_waiting) == (leader_id,)

        wait_until(waiting_only_for_the_killed_one, 60, interval=0.5, what="the KMAs still up to take it")
        leader.restart()
        wait_until(lambda: rotated(so, 2), 120, interval=0.2, what="the rotation to end")
        for kma in kmas:
            assert kma.client("so").get_status().master_key_generation == 2
            with kmip(drive, service_address(kma)) as client:
                assert all(client.get(uid) == material for uid, material in written.items())
        assert old_blobs() == 0
        with replica(follower) as db:
            assert [tuple(r) for r in db.execute("SELECT DISTINCT master_generation FROM kmas")] == [(2,)]
            assert db.execute("SELECT count(*) FROM master_key_generations").fetchone()[0] == 0
            # and no KMA took a row sealed under the new generation for a forged one
            assert not db.execute("SELECT 1 FROM audit_events WHERE operation = 'security.tamper'").fetchall()


@pytest.fixture
def hsm_kma(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningKma]:
    """A demo KMA whose master key is in a SoftHSM2 token (as tests/integration/test_hsm.py's)."""
    token = softhsm(tmp_path)
    monkeypatch.setenv("SOFTHSM2_CONF", str(token.conf))
    table = tmp_path / "hsm.toml"
    table.write_text(token.table())
    kma = RunningKma.demo_in(tmp_path, hsm=table)
    yield kma
    kma.stop()


def test_a_kma_with_its_master_key_in_an_hsm_rotates_its_unlock_key(
    tmp_path: Path, hsm_kma: RunningKma
) -> None:
    folder = hsm_drive(hsm_kma, tmp_path)
    with kmip(folder, service_address(hsm_kma)) as client:
        uid = client.create_and_activate("H00001")
        material = client.get(uid)
    so = hsm_kma.client("so")
    so.rotate_master_key(credentials=creds(hsm_kma, *MEMBERS))
    wait_until(lambda: rotated(so, 2), 120, interval=0.2, what="the rotation to end")
    assert set(blobs_by_generation(hsm_kma)) == {2}
    hsm_kma.restart()  # autonomous unlock with the new generation, through the same token key
    assert not hsm_kma.client("so").get_status().locked
    with kmip(folder, service_address(hsm_kma)) as client:
        assert client.get(uid) == material


def _in_replica(kma: RunningKma, key_id: str) -> bool:
    with replica(kma) as db:
        return (
            db.execute("SELECT 1 FROM keys WHERE id = ? AND key_group_id IS NOT NULL", (key_id,)).fetchone()
            is not None
        )
