"""`kma audit verify` passes on an untouched KMA and names the event when one byte is changed.

One demo KMA is run, used and stopped; each tampering is then done on a copy of its data
directory, the way someone holding the database file would: flipping a byte in the file itself,
or going through SQLite after dropping the guard triggers.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kma_process import RunningKma, read_only_db, run_kma


@pytest.fixture(scope="module")
def stopped_kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    """A demo KMA that has served some requests and was then stopped cleanly."""
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("audit-chain"))
    op = kma.client("op")
    op.create_data_unit("AC0001", "Chain test cartridge")
    op.issue_key("backup-dallas", "AC0001")
    assert kma.client("auditor").verify_audit_chain().intact
    kma.stop()
    yield kma


def copy_of(kma: RunningKma, tmp_path: Path) -> Path:
    """A copy of the data directory with everything in the main database file (no WAL)."""
    data_dir = tmp_path / "copy"
    shutil.copytree(kma.data_dir, data_dir)
    db = sqlite3.connect(data_dir / "kma.db")
    try:
        assert db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    finally:
        db.close()
    return data_dir


def verify(data_dir: Path) -> tuple[int, str]:
    result = run_kma("audit", "verify", "--data-dir", str(data_dir), check=False)
    return result.returncode, result.stdout + result.stderr


def event_with(data_dir: Path, operation: str) -> tuple[int, str]:
    with read_only_db(data_dir / "kma.db") as db:
        rows = db.execute(
            "SELECT id, message FROM audit_events WHERE operation = ? AND condition = 'success' ORDER BY id",
            (operation,),
        ).fetchall()
    assert rows, f"the demo has no {operation} event"
    event_id, message = rows[len(rows) // 2]
    return int(event_id), str(message)


# "issued key ..." -> "issuee key ...": the sixth character of one event's message.
ONE_CHARACTER = (
    "UPDATE audit_events SET message = substr(message, 1, 5) || 'e' || substr(message, 7) "
    "WHERE id = {event_id}"
)


def sql(data_dir: Path, *statements: str) -> None:
    db = sqlite3.connect(data_dir / "kma.db")
    try:
        db.executescript("BEGIN;\n" + ";\n".join(statements) + ";\nCOMMIT;")
    finally:
        db.close()


def test_verify_passes_on_an_untouched_kma(stopped_kma: RunningKma, tmp_path: Path) -> None:
    code, output = verify(stopped_kma.data_dir)
    assert code == 0, output
    assert "intact" in output
    code, output = verify(copy_of(stopped_kma, tmp_path))
    assert code == 0, output


def test_one_flipped_bit_in_the_database_file_is_found_and_the_event_named(
    stopped_kma: RunningKma, tmp_path: Path
) -> None:
    data_dir = copy_of(stopped_kma, tmp_path)
    event_id, message = event_with(data_dir, "key.destroy")
    db_file = data_dir / "kma.db"
    raw = bytearray(db_file.read_bytes())
    needle = message.encode()
    at = raw.find(needle)
    assert at >= 0 and raw.find(needle, at + 1) == -1, "the message should be stored exactly once"
    # "destroyed" -> "destroyee": one bit of one byte, still valid text, the file still a valid database.
    offset = at + len("destroye")
    raw[offset] ^= 0x01
    db_file.write_bytes(bytes(raw))

    with read_only_db(db_file) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"  # SQLite cannot tell...
        changed = db.execute("SELECT message FROM audit_events WHERE id = ?", (event_id,)).fetchone()[0]
    assert changed == message[: len("destroye")] + "e" + message[len("destroyed") :]

    code, output = verify(data_dir)  # ... the hash chain can
    assert code == 1, output
    assert f"(first bad event: #{event_id})" in output, output


def test_one_character_changed_through_sqlite_is_found_and_the_event_named(
    stopped_kma: RunningKma, tmp_path: Path
) -> None:
    data_dir = copy_of(stopped_kma, tmp_path)
    event_id, message = event_with(data_dir, "key.issue")
    assert message.startswith("issued key ")
    sql(data_dir, "DROP TRIGGER audit_events_no_update", ONE_CHARACTER.format(event_id=event_id))
    with read_only_db(data_dir / "kma.db") as db:
        assert db.execute("SELECT message FROM audit_events WHERE id = ?", (event_id,)).fetchone()[0] == (
            "issuee" + message[len("issued") :]
        )

    code, output = verify(data_dir)
    assert code == 1, output
    assert f"(first bad event: #{event_id})" in output, output


def test_the_guard_triggers_refuse_changes_while_they_are_in_place(
    stopped_kma: RunningKma, tmp_path: Path
) -> None:
    data_dir = copy_of(stopped_kma, tmp_path)
    event_id, _ = event_with(data_dir, "key.issue")
    with pytest.raises(sqlite3.IntegrityError, match="cannot be changed"):
        sql(data_dir, f"UPDATE audit_events SET message = 'nothing' WHERE id = {event_id}")
    with pytest.raises(sqlite3.IntegrityError, match="cannot be removed"):
        sql(data_dir, f"DELETE FROM audit_events WHERE id = {event_id}")
    assert verify(data_dir)[0] == 0


def test_removing_the_last_event_is_found(stopped_kma: RunningKma, tmp_path: Path) -> None:
    data_dir = copy_of(stopped_kma, tmp_path)
    with read_only_db(data_dir / "kma.db") as db:
        last_id = db.execute("SELECT max(id) FROM audit_events").fetchone()[0]
    sql(data_dir, "DROP TRIGGER audit_events_no_delete", f"DELETE FROM audit_events WHERE id = {last_id}")

    code, output = verify(data_dir)
    assert code == 1, output
    assert "missing" in output  # the chain no longer ends at its recorded head


def test_a_kma_with_a_broken_trail_says_so_through_the_api(stopped_kma: RunningKma, tmp_path: Path) -> None:
    data_dir = copy_of(stopped_kma, tmp_path)
    event_id, _ = event_with(data_dir, "key.issue")
    sql(data_dir, "DROP TRIGGER audit_events_no_update", ONE_CHARACTER.format(event_id=event_id))
    kma = RunningKma(data_dir, stopped_kma.demo)
    kma.start()
    try:
        report = kma.client("auditor").verify_audit_chain()
    finally:
        kma.stop()
    assert not report.intact
    assert report.first_bad_event_id == event_id
