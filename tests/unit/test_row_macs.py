"""The row MAC helper: what a MAC covers, and that a seal matches only the values it was made from."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kma.crypto import WrappingKey
from kma.services.integrity.row_macs import MEMBERSHIP, TABLES, USERS, mac, seal, sealed_tables, tampered_rows
from kma.vault import row_mac_key

KEY = row_mac_key(WrappingKey(bytes(32)))
EVERY_TABLE = frozenset(s.table for s in TABLES)
USER = {"id": "jo", "roles": "auditor", "enabled": 1, "passphrase_hash": "$argon2id$..."}


def _db() -> sqlite3.Connection:
    """Every sealed table, with its key, its sealed fields and a MAC (as the migrations make them)."""
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    for sealed in TABLES:
        db.execute(f"CREATE TABLE {sealed.table} ({', '.join((*sealed.key, *sealed.fields, 'mac'))})")
    db.execute(
        "INSERT INTO users (id, roles, enabled, passphrase_hash) VALUES ('jo', 'auditor', 1, '$argon2id$...')"
    )
    return db


def _run(db: sqlite3.Connection, row: dict[str, object]) -> int:
    stmt = seal(KEY, USERS, row)
    return db.execute(stmt.sql, stmt.params).rowcount


def test_every_power_granting_field_and_the_key_change_the_mac() -> None:
    base = mac(KEY, USERS, USER)
    for field, other in (
        ("id", "eve"),
        ("roles", "security_officer"),
        ("enabled", 0),
        ("passphrase_hash", "x"),
    ):
        assert mac(KEY, USERS, {**USER, field: other}) != base
    assert mac(row_mac_key(WrappingKey(b"\x01" * 32)), USERS, USER) != base
    # the primary key's parts are kept apart: no two keys share an encoding
    member = {"key_group_id": "a", "agent_id": "b"}
    assert mac(KEY, MEMBERSHIP, member) != mac(KEY, MEMBERSHIP, {"key_group_id": "a/b", "agent_id": ""})


def test_a_seal_sets_the_mac_only_on_the_row_as_it_was_computed_from() -> None:
    db = _db()
    assert _run(db, {**USER, "roles": "security_officer"}) == 0  # changed meanwhile: the batch refuses
    assert _run(db, USER) == 1
    assert tampered_rows(db, KEY, EVERY_TABLE) == []
    db.execute("UPDATE users SET roles = 'security_officer'")
    assert tampered_rows(db, KEY, EVERY_TABLE) == ["users 'jo' has a MAC that does not verify"]


def test_rows_without_a_mac_are_tampered_only_once_this_kma_sealed() -> None:
    db = _db()
    assert tampered_rows(db, KEY, frozenset()) == []
    assert tampered_rows(db, KEY, EVERY_TABLE) == ["users 'jo' has no MAC"]


def test_a_table_sealed_by_a_later_version_is_trusted_on_first_use(tmp_path: Path) -> None:
    """The `rows_sealed` file of a KMA that unlocked before the list of tables was kept names none:
    it stands for the tables sealed then, so the row a later migration writes (the two-step sign-in
    policy's) is no tamper until this KMA has unlocked on that version and sealed it."""
    db = _db()
    db.execute("UPDATE users SET mac = ?", (mac(KEY, USERS, USER),))
    db.execute("INSERT INTO second_factor_policy (id, roles) VALUES (1, '')")
    marker = tmp_path / "rows-sealed"
    assert sealed_tables(marker) == frozenset()
    marker.write_text("rows that grant power carry a MAC\n")  # as a KMA before the list wrote it
    assert "second_factor_policy" not in sealed_tables(marker) and "users" in sealed_tables(marker)
    assert tampered_rows(db, KEY, sealed_tables(marker)) == []
    marker.write_text("rows that grant power carry a MAC\n" + "".join(f"table: {t}\n" for t in EVERY_TABLE))
    assert sealed_tables(marker) == EVERY_TABLE
    assert tampered_rows(db, KEY, sealed_tables(marker)) == ["second_factor_policy '1' has no MAC"]
