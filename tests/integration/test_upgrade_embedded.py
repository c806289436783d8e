"""Issue 30: an embedded KMA's data dir made by release 0.1.0 (demo history, keys a simulated drive
was issued) is upgraded by this tree's KMA; a migration that fails midway leaves the store as it was,
and `kma status` and `kma serve` say why; the store of a newer release is refused, nothing written."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kma.store.schema import EXTRA_FOR_TESTS
from kms_client.release import release
from tests.support.agents import demo_passphrase, enroll, kmip, service_address
from tests.support.kma_process import RunningKma, read_only_db, run_kma
from tests.support.releases import release_tree

AGENT = "t10k-dal-01"
# Two migrations this tree does not ship: the first applies, the second fails halfway through.
GOOD = "CREATE TABLE upgrade_probe (id INTEGER PRIMARY KEY);\n"
FAILING = "CREATE TABLE half_done (id INTEGER PRIMARY KEY);\nINSERT INTO no_such_table VALUES (1);\n"


def _rows(db: Path) -> list[str]:
    with read_only_db(db) as conn:
        return list(conn.iterdump())


def _schema(db: Path) -> int:
    with read_only_db(db) as conn:
        return int(conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0])


@pytest.fixture(scope="module")
def old_kma(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunningKma, Path, dict[str, bytes]]:
    """A demo KMA made and served by release 0.1.0, stopped after a simulated drive got keys;
    with the agent's files and the bytes of every key the agent was given."""
    tmp = tmp_path_factory.mktemp("upgrade")
    old = release_tree("0.1.0", tmp / "release-0.1.0")
    kma = RunningKma.demo_in(tmp, source=old)
    agent = tmp / "agent" / AGENT
    enroll(kma, AGENT, agent, demo_passphrase(kma, AGENT))
    done = run_kma(
        "agent",
        "simulate",
        "--agent-dir",
        str(agent),
        "--drives",
        "2",
        "--mounts",
        "6",
        "--write-ratio",
        "1",
        "--json",
        source=old,
    )
    assert json.loads(done.stdout)["failures"] == 0, done.stdout
    with kmip(agent) as client:
        uids = client.locate()
        assert uids
        keys = {uid: client.get(uid) for uid in uids}
    kma.stop()
    return kma, agent, keys


def test_a_failed_upgrade_leaves_the_store_as_it_was_and_says_why(
    old_kma: tuple[RunningKma, Path, dict[str, bytes]], tmp_path: Path
) -> None:
    kma, _, _ = old_kma
    db = kma.data_dir / "kma.db"
    before, schema = _rows(db), _schema(db)
    extra = tmp_path / "migrations"
    extra.mkdir()
    (extra / "9001_probe.sql").write_text(GOOD)
    (extra / "9002_fails_midway.sql").write_text(FAILING)
    failing = {EXTRA_FOR_TESTS: str(extra)}

    status = run_kma("status", "--data-dir", str(kma.data_dir), env=failing, check=False)
    assert status.returncode != 0
    said = "The upgrade failed at migration 9002_fails_midway.sql: no such table: no_such_table"
    assert said in status.stderr
    assert f"restored as it was before the upgrade (schema {schema})" in status.stderr
    assert "Traceback" not in status.stderr
    assert _rows(db) == before

    serve = run_kma(
        "serve",
        "--data-dir",
        str(kma.data_dir),
        "--management-port",
        "0",
        "--service-port",
        "0",
        env=failing,
        check=False,
    )
    assert serve.returncode != 0
    assert "The upgrade failed at migration 9002_fails_midway.sql" in serve.stderr
    assert "Traceback" not in serve.stderr
    assert _rows(db) == before
    assert "migration 9002_fails_midway.sql failed" in kma.log_text()
    # The copy taken before the upgrade, named for the release and schema it came from.
    copies = sorted(p.name for p in kma.data_dir.glob("kma-before-upgrade-from-*.db"))
    assert copies and copies[0].endswith(f"-schema-{schema}.db"), copies
    assert (kma.data_dir / copies[0]).stat().st_mode & 0o077 == 0  # as private as the store


def test_release_0_1_0_data_dir_upgrades_with_its_keys_and_audit_chain(
    old_kma: tuple[RunningKma, Path, dict[str, bytes]],
) -> None:
    kma, agent, keys = old_kma
    kma.source = None  # this tree's KMA, on the data dir 0.1.0 made
    kma.start()
    try:
        with kmip(agent, service_address(kma)) as client:
            assert {uid: client.get(uid) for uid in keys} == keys
        with read_only_db(kma.data_dir / "kma.db") as conn:
            versions = [r[0] for r in conn.execute("SELECT version FROM kmas")]
    finally:
        kma.stop()
    assert versions == [release()]
    verified = run_kma("audit", "verify", "--data-dir", str(kma.data_dir), check=False)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_store_from_a_newer_release_is_refused_and_not_written(tmp_path: Path) -> None:
    db = tmp_path / "kma" / "kma.db"
    kma = RunningKma.demo_in(tmp_path)
    kma.stop()
    newer = _schema(db) + 5
    with sqlite3.connect(db) as conn:  # what a later release's migration leaves behind
        conn.execute("INSERT INTO schema_migrations VALUES (?)", (newer,))
    conn.close()
    before_rows, before_bytes = _rows(db), db.read_bytes()

    for args in (["status"], ["serve", "--management-port", "0", "--service-port", "0"]):
        refused = run_kma(args[0], "--data-dir", str(kma.data_dir), *args[1:], check=False)
        assert refused.returncode != 0
        assert (
            f"This store was migrated by a newer KMA release (schema {newer}; this release knows up "
            f"to {newer - 5}). Install that release or later."
        ) in refused.stderr
        assert "Traceback" not in refused.stderr
    assert _rows(db) == before_rows
    assert db.read_bytes() == before_bytes
