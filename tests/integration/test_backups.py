"""Backups end to end (issue 12): a demo KMA's core security and database backups, taken with the
`kma backup` commands over TLS, restored with `kma init` in `mode = "restore"` into a fresh data
directory, and every way a restore must refuse while leaving the target untouched.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kma.kmip.client import KmipFailure
from kma.store import fts
from kma.store.schema import EXTRA_FOR_TESTS
from kms_client import Conflict as ClientConflict
from tests.support.agents import demo_passphrase, enroll, kmip, service_address
from tests.support.first_setup import init_one_kma, start_one_kma_with_admin
from tests.support.kma_process import RunningKma, read_only_db, run_kma
from tests.support.waiting import wait_until

# Rows that legitimately differ after a restore: the restored KMA's addresses and local unlock key
# (network settings are not restored), sessions (everyone signs in again), the backups table (the
# restored one is recorded), and audit events after the backup, with what follows from them (the chain
# heads, the per-day counts, the free-text index): those are compared apart, and the chain is verified.
SKIPPED_TABLES = {"sessions", "backups", "audit_events", "audit_heads", "audit_events_per_day"}
# The free-text indexes and their marks: the source's writer goes on indexing, in the background,
# rows its backup held before it indexed them (kma/store/fts.py); the restored KMA does the same.
FREE_TEXT = (*(index.name for index in fts.INDEXES), "text_index_marks")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("backup-source"), test_clock=False)
    yield kma
    kma.stop()


def cli(kma: RunningKma, user: str, *args: str, check: bool = True) -> Any:
    secret = kma.data_dir.parent / f"{user}.passphrase"
    secret.write_text(kma.passphrases[user] + "\n")
    return run_kma(
        *args,
        "--data-dir",
        str(kma.data_dir),
        "--kma",
        kma.address,
        "--user",
        user,
        "--passphrase-file",
        str(secret),
        check=check,
    )


def take_backups(kma: RunningKma, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    core, database = folder / "core.kmacore", folder / "db.kmabackup"
    cli(kma, "so", "backup", "core", "--out", str(core))
    made = cli(kma, "backup", "backup", "create", "--out", str(database))
    assert "Database backup" in made.stdout, made.stdout + made.stderr
    return core, database


def answers(tmp: Path, core: Path, database: Path, members: list[dict[str, str]]) -> Path:
    lines = [
        'mode = "restore"',
        f'database_backup = "{database}"',
        f'core_security_backup = "{core}"',
        "[kma]",
        'management_address = "127.0.0.1:0"',
        'service_address = "127.0.0.1:0"',
    ]
    for m in members:
        lines += ["[[key_split.members]]", f'name = "{m["name"]}"', f'passphrase = "{m["passphrase"]}"']
    path = tmp / "restore-answers.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def quorum(kma: RunningKma, count: int | None = None) -> list[dict[str, str]]:
    split = kma.demo["key_split"]
    return list(split["members"][: count if count is not None else split["threshold"]])


def rows(db: Path, table: str, skip_columns: tuple[str, ...] = ()) -> dict[Any, tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        info = list(conn.execute(f"PRAGMA table_info({table})"))
        columns = [r[1] for r in info if r[1] not in skip_columns]
        # Rows are matched by primary key (a WITHOUT ROWID table has no rowid), else by rowid.
        key = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]] or ["rowid"]
        found = conn.execute(f"SELECT {', '.join(key)}, {', '.join(columns)} FROM {table}").fetchall()
    finally:
        conn.close()
    return {tuple(r[: len(key)]): tuple(r[len(key) :]) for r in found}


def tables(db: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    finally:
        conn.close()
    return sorted(n for n in names if n not in SKIPPED_TABLES and not n.startswith(("sqlite_", *FREE_TEXT)))


def test_round_trip_restores_every_row_and_serves_enrolled_agents(source: RunningKma, tmp_path: Path) -> None:
    # Given a demo KMA with keys in every state, a pending quorum operation and an enrolled agent
    so = source.client("so")
    pending = so._connection.request("PATCH", "/users/qm3", body={"name": "Sasha Renamed"})
    assert pending.status_code == 202
    agent_dir = tmp_path / "agent"
    enroll(source, "t10k-dal-01", agent_dir, demo_passphrase(source, "t10k-dal-01"))
    with kmip(agent_dir, service_address(source)) as agent:
        key_id = agent.create_and_activate("E30001")
        material = agent.get(key_id)
    # When the Security Officer and the Backup Operator take both backups, and the KMA stops
    auditor = source.client("auditor")  # signed in before: what changes after the backup is not in it
    core, database = take_backups(source, tmp_path / "offline")
    listing = auditor.list_backups()
    assert listing.items[0].keys > 0 and listing.core_security_backup.up_to_date
    source.stop()
    try:
        target = tmp_path / "restored" / "kma"
        done = run_kma(
            "init",
            "--data-dir",
            str(target),
            "--answers",
            str(answers(tmp_path, core, database, quorum(source))),
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "Restored KMA 'kma-dal-1'" in done.stdout
        # Then every row of every table is identical (keys compared wrapped) ...
        old, new = source.data_dir / "kma.db", target / "kma.db"
        assert tables(new) == tables(old)
        for table in tables(old):
            skip = (
                # the entry's signatures cover its addresses: signed again for the new ones
                (
                    "management_address",
                    "service_address",
                    "autounlock_master",
                    "updated_at",
                    "signature",
                    "route_signature",
                )
                if table == "kmas"
                else ("backup_mark", "withheld_at")
                if table == "keys"
                else ()
            )
            assert rows(new, table, skip) == rows(old, table, skip), table
        restored_events = rows(new, "audit_events")
        source_events = rows(old, "audit_events")
        restore_event = restored_events.pop(max(restored_events))
        assert "backup.restore" in restore_event
        assert all(source_events[i] == e for i, e in restored_events.items())
        assert len(restored_events) == listing.items[0].audit_events
        # (the restored trail's per-day counts are its own: the restore's event counted, none after)
        with read_only_db(target / "kma.db") as db:
            counted = db.execute("SELECT day, severity, events FROM audit_events_per_day WHERE events > 0")
            trail = db.execute(
                "SELECT created_at / 86400, severity, count(*) FROM audit_events GROUP BY 1, 2"
            ).fetchall()
            assert sorted(map(tuple, counted)) == sorted(map(tuple, trail))
        # ... the audit chain verifies ...
        verify = run_kma("audit", "verify", "--data-dir", str(target), check=False)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        # ... and the restored KMA serves the agent enrolled before the backup, and sign-in works
        restored = RunningKma(target, source.demo, source=source.source)
        restored.start()
        try:
            assert restored.fingerprint == source.fingerprint
            with kmip(agent_dir, service_address(restored)) as agent:
                assert agent.get(key_id) == material
            op = restored.client("op")
            assert op.get_key(key_id).data_unit_id == "E30001"
            events = restored.client("auditor").list_audit_events(operation="backup.restore").items
            assert events and "with a quorum of the key split" in events[0].message
        finally:
            restored.stop()
    finally:
        source.start()


@pytest.fixture(scope="module")
def other_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("other-cluster"), test_clock=False)
    yield kma
    kma.stop()


@pytest.fixture(scope="module")
def files(source: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return take_backups(source, tmp_path_factory.mktemp("files"))


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes; on Windows the folder's ACL applies")
def test_a_withheld_key_is_bound_to_the_group_of_the_first_agent_that_reads_it(
    source: RunningKma, tmp_path: Path
) -> None:
    """Issue 39, item 7: a key ID is no secret (the tape carries it), so a key a restore withheld is
    not readable by every agent: the first read binds it to that agent's group, audited."""
    drives = {"t10k-dal-02": tmp_path / "dallas", "t10k-bos-01": tmp_path / "boston"}
    for agent_id, folder in drives.items():
        enroll(source, agent_id, folder, demo_passphrase(source, agent_id))
    core, database = take_backups(source, tmp_path / "offline")
    source.stop()
    try:
        target = tmp_path / "restored" / "kma"
        run_kma(
            "init",
            "--data-dir",
            str(target),
            "--answers",
            str(answers(tmp_path, core, database, quorum(source))),
        )
        conn = sqlite3.connect(f"file:{target / 'kma.db'}?mode=ro", uri=True)
        try:  # a pool key the source may have issued after the backup, its ID on some tape
            (withheld,) = conn.execute(
                "SELECT id FROM keys WHERE withheld_at IS NOT NULL AND key_group_id IS NULL LIMIT 1"
            ).fetchone()
        finally:
            conn.close()
        restored = RunningKma(target, source.demo, source=source.source)
        restored.start()
        try:
            # When a Dallas drive reads it by its ID, it gets it; a Boston drive then does not
            with kmip(drives["t10k-dal-02"], service_address(restored)) as dallas:
                assert dallas.get(withheld)
            with kmip(drives["t10k-bos-01"], service_address(restored)) as boston, pytest.raises(KmipFailure):
                boston.get(withheld)
            # and the officer sees the key in the Dallas group, and why, in the audit trail
            assert restored.client("op").get_key(withheld).key_group_id == "backup-dallas"
            bound = restored.client("auditor").list_audit_events(operation="key.withheld_bound").items
            assert [e.subject_id for e in bound] == [withheld]
            assert "t10k-dal-02" in bound[0].message and "backup-dallas" in bound[0].message
            assert any(
                "1 keys withheld by the restore were bound" in w
                for w in restored.client().get_status().warnings
            )
        finally:
            restored.stop()
    finally:
        source.start()


def test_backups_the_manager_saves_are_this_accounts_only(source: RunningKma, tmp_path: Path) -> None:
    """Both backups, saved by the manager under a desktop's usual umask, over older looser files
    too, are 0600 like the KMA's own scheduled copies (issue 26, item 7)."""
    core, database = tmp_path / "core.kmacore", tmp_path / "db.kmabackup"
    for stale in (core, database):
        stale.write_bytes(b"an older file of the same name")
        stale.chmod(0o644)
    umask = os.umask(0o022)
    try:
        source.client("so").take_core_security_backup(core)
        backup = source.client("backup")
        backup.download_backup(backup.create_backup().id, database)
    finally:
        os.umask(umask)
    assert {p.name: p.stat().st_mode & 0o777 for p in (core, database)} == {
        core.name: 0o600,
        database.name: 0o600,
    }
    assert core.stat().st_size > 100 and database.stat().st_size > 100


def refused(tmp: Path, core: Path, database: Path, members: list[dict[str, str]]) -> str:
    """A restore that must fail: its reason, after checking the target was left untouched."""
    target = tmp / "target"
    target.mkdir(parents=True)
    done = run_kma(
        "init",
        "--data-dir",
        str(target),
        "--answers",
        str(answers(tmp, core, database, members)),
        check=False,
    )
    assert done.returncode != 0, done.stdout
    assert list(target.iterdir()) == []
    assert not [p for p in tmp.iterdir() if p.name.startswith(".target-restore-")]  # no staging left
    return str(done.stderr)


def restores(tmp: Path, core: Path, database: Path, members: list[dict[str, str]]) -> None:
    """A restore that must succeed, into a new data dir under `tmp`."""
    tmp.mkdir(parents=True)
    done = run_kma(
        "init",
        "--data-dir",
        str(tmp / "kma"),
        "--answers",
        str(answers(tmp, core, database, members)),
        check=False,
    )
    assert done.returncode == 0, done.stderr


def changed(path: Path, at: int, tmp: Path) -> Path:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    out = tmp / f"changed-{at}{path.suffix}"
    out.write_bytes(bytes(data))
    return out


def test_restore_refuses_too_few_or_wrong_passphrases(
    source: RunningKma, files: tuple[Path, Path], tmp_path: Path
) -> None:
    core, database = files
    assert "needs 3 key split members' passphrases" in refused(
        tmp_path / "a", core, database, quorum(source, 2)
    )
    wrong = quorum(source)
    wrong[1] = {"name": wrong[1]["name"], "passphrase": "not-the-passphrase"}
    assert f"passphrase of key split member '{wrong[1]['name']}' is wrong" in refused(
        tmp_path / "b", core, database, wrong
    )
    stranger = [*quorum(source, 2), {"name": "mallory", "passphrase": "x" * 12}]
    assert "'mallory' is not a member" in refused(tmp_path / "c", core, database, stranger)


def test_restore_refuses_a_truncated_or_changed_file(
    source: RunningKma, files: tuple[Path, Path], tmp_path: Path
) -> None:
    core, database = files
    cut = tmp_path / "cut.kmabackup"
    cut.write_bytes(database.read_bytes()[:-100])
    assert "truncated" in refused(tmp_path / "a", core, cut, quorum(source))
    size = database.stat().st_size
    for at in (40, size // 2, size - 1):  # the manifest, the database, the tag
        reason = refused(tmp_path / f"byte-{at}", core, changed(database, at, tmp_path), quorum(source))
        assert "changed" in reason or "damaged" in reason, reason
    core_text = core.read_text()
    threshold_changed = tmp_path / "core-2.kmacore"
    threshold_changed.write_text(core_text.replace('"threshold": 3', '"threshold": 2'))
    reason = refused(tmp_path / "core", threshold_changed, database, quorum(source))
    assert "changed" in reason or "do not rebuild" in reason, reason


def test_restore_refuses_another_clusters_backup(
    source: RunningKma, other_cluster: RunningKma, files: tuple[Path, Path], tmp_path: Path
) -> None:
    core, database = files
    other_core, other_database = take_backups(other_cluster, tmp_path / "other")
    reason = refused(tmp_path / "a", core, other_database, quorum(source))
    assert "they do not belong together" in reason
    assert "they do not belong together" in refused(
        tmp_path / "b", other_core, database, quorum(other_cluster)
    )


def test_restore_refuses_a_backup_from_a_newer_schema(
    other_cluster: RunningKma, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a backup made by a KMA of a later release, which migrated its store one step further
    later = tmp_path / "later-release-migrations"
    later.mkdir()
    (later / "9999_later_release.sql").write_text("CREATE TABLE later_release (id INTEGER PRIMARY KEY);\n")
    other_cluster.stop()
    with monkeypatch.context() as later_release:
        later_release.setenv(EXTRA_FOR_TESTS, str(later))
        other_cluster.start()
    core, database = take_backups(other_cluster, tmp_path / "newer")
    reason = refused(tmp_path / "a", core, database, quorum(other_cluster))
    assert "made by a newer KMA (schema 9999" in reason


@pytest.fixture
def new_kma(tmp_path: Path) -> Iterator[RunningKma]:
    """A KMA just made with `kma init` (no demo data, no backup), with a user of every role."""
    init_one_kma(tmp_path / "kma")
    kma = start_one_kma_with_admin(tmp_path / "kma")
    yield kma
    kma.stop()


def test_a_new_one_kma_cluster_issues_no_key_until_a_backup_holds_its_pool(
    new_kma: RunningKma, tmp_path: Path
) -> None:
    admin = new_kma.client("admin")
    admin.create_key_policy("p", encryption_period=86400, cryptoperiod=2 * 86400)
    admin.create_key_group("g", "p")
    admin.create_data_unit("E00001")
    # Given a new KMA whose pool was generated but never backed up
    wait_until(lambda: admin.get_dashboard().backups.keys_waiting_for_backup == 5, 30)  # type: ignore[union-attr]
    dashboard = admin.get_dashboard()
    assert dashboard.keys_by_state["generated"] == 5 and dashboard.keys_by_state["ready"] == 0
    assert [k.pool_ready for k in dashboard.kmas] == [0]  # the KMA table's pool counts Ready keys alone
    assert any("5 generated keys wait for a database backup" in w for w in dashboard.warnings)
    assert any("There is no database backup" in w for w in dashboard.warnings)
    # When a key is asked for, it is refused with the reason
    with pytest.raises(ClientConflict, match="only once a database backup holds it"):
        admin.issue_key("g", "E00001")
    # When the core security backup and a database backup are taken (in that order), keys are issued
    status = admin.core_security_backup_status()
    assert not status.exists and "before the first database backup" in status.message
    with pytest.raises(ClientConflict, match="core security backup first"):
        admin.create_backup()
    admin.take_core_security_backup(tmp_path / "core.kmacore")
    admin.create_backup()
    key = admin.issue_key("g", "E00001")
    assert key.state == "protect_and_process"
    after = admin.get_dashboard()
    assert after.keys_by_state["ready"] == 4 and after.backups is not None
    assert after.backups.ready_keys == 4 and after.backups.last_backup_age is not None
    assert [k.pool_ready for k in after.kmas] == [4]
    assert after.backups.ready_keys_run_out_in == 4 * 3600  # one key issued in the last hour
    status = run_kma("status", "--data-dir", str(new_kma.data_dir)).stdout
    assert "Ready keys 4; waiting for a backup" in status and "run out in 4 h" in status


def test_a_one_kma_cluster_issuing_faster_than_its_backups_is_warned_before_it_runs_dry(
    new_kma: RunningKma, tmp_path: Path
) -> None:
    """Fast issuing (a store filling up) after the one backup: at the week's average the Ready keys
    would last weeks, at the last hour's rate they run out within hours, which the dashboard says
    (issue 33: a bench issuing faster than its backups stalled, told its pool lasted 9 h)."""
    admin = new_kma.client("admin")
    admin.create_key_policy("p", encryption_period=86400, cryptoperiod=2 * 86400)
    admin.create_key_group("g", "p")
    admin.create_data_unit("E00001")
    admin.update_kma(admin.list_kmas().items[0].id, key_pool_size=60)
    wait_until(lambda: admin.get_dashboard().backups.keys_waiting_for_backup >= 55, 60)  # type: ignore[union-attr]
    admin.take_core_security_backup(tmp_path / "core.kmacore")
    admin.create_backup()
    for _ in range(12):
        admin.issue_key("g", "E00001")
    dashboard = admin.get_dashboard()
    assert dashboard.backups is not None and dashboard.backups.ready_keys_run_out_in is not None
    assert dashboard.backups.ready_keys_run_out_in <= 4 * 3600  # 12 an hour; at most 48 left
    assert any(
        "12 keys in the last hour, 12 in the last day" in w and "Ready keys run out in" in w
        for w in dashboard.warnings
    )


def test_a_destroyed_key_is_incomplete_while_a_backup_holds_it(fresh_kma: RunningKma) -> None:
    # Given the demo's keys destroyed yesterday, after its first backup (400 days ago) took them
    op, backup = fresh_kma.client("op"), fresh_kma.client("backup")
    destroyed = [k.id for k in op.list_keys(state="destroyed").items]
    assert len(destroyed) == 2
    first = min(backup.list_backups().items, key=lambda b: b.created_at)
    for key_id in destroyed:
        key = op.get_key(key_id)
        assert key.destruction_complete is False
        assert [(b.id, b.created_at) for b in key.held_by_backups] == [(first.id, first.created_at)]
    assert all(k.destruction_complete is False for k in op.list_keys(state="destroyed").items)
    # When the Backup Operator deletes that backup, their destruction is complete
    backup.delete_backup(first.id)
    for key_id in destroyed:
        key = op.get_key(key_id)
        assert key.destruction_complete is True and key.held_by_backups == ()
    assert first.id not in {b.id for b in backup.list_backups().items}
    event = fresh_kma.client("auditor").list_audit_events(operation="backup.delete").items[0]
    assert "destruction of 2 destroyed keys it held is now complete" in event.message
    assert not (fresh_kma.data_dir / "backups" / f"{first.id}.kmabackup").exists()


def test_scheduled_backups_keep_the_newest_and_a_failure_is_an_error_event(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    folder = tmp_path / "scheduled"
    folder.mkdir()

    def in_folder() -> set[str]:
        return {p.name for p in folder.iterdir() if p.suffix == ".kmabackup"}

    # Given an hourly schedule keeping 2, run for three hours
    made: list[set[str]] = []
    for _ in range(3):
        before = in_folder()
        backup = fresh_kma.client("backup")  # sessions end with the hour the clock moves on
        backup.set_backup_schedule("hourly", str(folder), keep=2)  # also wakes the scheduler
        wait_until(lambda before=before: in_folder() - before, 30)  # type: ignore[misc]
        made.append(in_folder() - before)
        fresh_kma.advance_clock(3601)
    # Then the newest 2 stay, in the folder and on the KMA; the oldest expired
    backup, auditor = fresh_kma.client("backup"), fresh_kma.client("auditor")
    scheduled = [b for b in backup.list_backups().items if b.scheduled]
    assert len(scheduled) == 2 and in_folder() == {f"{b.id}.kmabackup" for b in scheduled}
    for b in scheduled:  # the copies in the folder are the backups, byte for byte
        assert hashlib.sha256((folder / f"{b.id}.kmabackup").read_bytes()).hexdigest() == b.sha256
    (oldest,) = made[0]
    assert oldest not in in_folder()
    expired = auditor.list_audit_events(operation="backup.delete").items[0]
    assert "expired (schedule keeps 2)" in expired.message
    # When the target folder disappears, the next scheduled backup fails as an error event
    for name in in_folder():
        (folder / name).unlink()
    folder.rmdir()
    wait_until(lambda: auditor.list_audit_events(operation="backup.scheduled").items, timeout=30)
    failed = auditor.list_audit_events(operation="backup.scheduled").items[0]
    assert failed.severity == "error" and "does not exist" in failed.message
    assert "does not exist" in (backup.get_backup_schedule().last_error or "")


def test_a_key_split_change_supersedes_the_core_security_backup_for_every_later_database_backup(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    from tests.integration.test_key_split_change import NAMES, NEW, enrol_all
    from tests.integration.test_quorum import creds

    # Given the demo's core security backup, taken with the split alice..erin (3 of 5), and a
    # database backup taken before the change
    old_core = fresh_kma.data_dir / "demo-core-security-backup.kmacore"
    old_quorum = quorum(fresh_kma)
    before = tmp_path / "before-change.kmabackup"
    cli(fresh_kma, "backup", "backup", "create", "--out", str(before))
    # When the key split changes
    so = fresh_kma.client("so")
    change = so.change_key_split(2, NAMES, credentials=creds(fresh_kma, "carol", "dave", "erin"))
    assert enrol_all(fresh_kma, change).state == "executed"
    # Then the API, `kma backup list` and the dashboard say the core security backup is superseded
    status = fresh_kma.client("backup").core_security_backup_status()
    assert status.exists and not status.up_to_date and "superseded" in status.message
    assert "superseded" in cli(fresh_kma, "backup", "backup", "list").stdout
    assert any("superseded" in w for w in fresh_kma.client("so").get_dashboard().warnings)
    # ... and no database backup is taken until a new core security backup exists
    refusal = cli(fresh_kma, "backup", "backup", "create", "--out", str(tmp_path / "x"), check=False)
    assert refusal.returncode != 0 and "new core security backup" in refusal.stderr
    new_core = tmp_path / "new.kmacore"
    cli(fresh_kma, "so", "backup", "core", "--out", str(new_core))
    after = tmp_path / "after-change.kmabackup"
    cli(fresh_kma, "backup", "backup", "create", "--out", str(after))
    new_quorum = [{"name": name, "passphrase": passphrase} for name, passphrase in NEW[1:]]

    # The old core security backup and the old members' passphrases open nothing taken after it
    reason = refused(tmp_path / "old-core", old_core, after, old_quorum)
    assert "taken after a key split change" in reason and "does not open it" in reason
    # ... only what was taken before it
    restores(tmp_path / "old", old_core, before, old_quorum)
    # The new one, with the new members' passphrases, opens both
    restores(tmp_path / "new-after", new_core, after, new_quorum)
    restores(tmp_path / "new-before", new_core, before, new_quorum)
