"""A batch with Undo puts its writes back only while the object still holds what the batch wrote
(kma/kmip/undo.py): a key someone revoked or bound to a tape in the meantime is left as it is,
and the compensation is refused (the KMIP item is then answered failed, and the refusal audited).
Run against the real schema, as the store runs a batch: all statements or none."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from kma.services.agent_keys import key_undo
from kma.services.agent_keys.key_access import AgentAccess
from kma.store import Stmt
from kma.store.sqlite import connect, migrate

AGENT = AgentAccess("t10k-dal-01", True, "dallas", "g", frozenset({"g"}), "f")
AT = 1_000_000  # when the batch ran
DAY = 86400


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = connect(tmp_path / "kma.db")
    migrate(conn)
    yield conn
    conn.close()


def applied(db: sqlite3.Connection, statements: Sequence[Stmt]) -> bool:
    """Run `statements` as one batch; False (and nothing changed) when one's guard refuses."""
    db.execute("BEGIN")
    for stmt in statements:
        count = db.execute(stmt.sql, stmt.params).rowcount
        if stmt.expect is not None and count != stmt.expect:
            db.execute("ROLLBACK")
            return False
    db.execute("COMMIT")
    return True


def registered_key(db: sqlite3.Connection, key_id: str, **columns: object) -> None:
    row = {"id": key_id, "kma_id": "kma-1", "created_at": AT, "registered_by": AGENT.agent_id, **columns}
    db.execute(
        f"INSERT INTO keys ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
    )
    db.execute(
        "INSERT INTO key_custom_attributes (key_id, name, idx, value) VALUES (?, 'x-Tag', 0, 'a')", (key_id,)
    )


def test_an_activation_is_undone_only_while_the_key_is_as_the_batch_left_it(db: sqlite3.Connection) -> None:
    active = {"activated_at": AT, "protect_until": AT + DAY, "deactivate_at": AT + 30 * DAY}
    registered_key(db, "k1", **active)
    registered_key(db, "k2", **{**active, "deactivate_at": AT})  # revoked in the same second
    registered_key(db, "k3", **active, compromised_at=AT)

    assert applied(db, [key_undo.unactivate("k1", AT, 5, None)])
    row = db.execute("SELECT activated_at, protect_until, deactivate_at FROM keys WHERE id = 'k1'").fetchone()
    assert tuple(row) == (None, 5, None)  # Pre-Active, with the Protect Stop Date it had
    assert not applied(db, [key_undo.unactivate("k2", AT, None, None)])
    assert not applied(db, [key_undo.unactivate("k3", AT, None, None)])


def test_a_registration_is_undone_only_while_the_object_is_unchanged(db: sqlite3.Connection) -> None:
    db.execute("INSERT INTO data_units (id, created_at, updated_at) VALUES ('VOL001', ?, ?)", (AT, AT))
    registered_key(db, "k1")
    registered_key(db, "k2", data_unit_id="VOL001")  # bound to a tape by someone since
    registered_key(db, "k3", activated_at=AT, protect_until=AT + DAY, deactivate_at=AT + DAY)

    assert applied(db, key_undo.unregister(AGENT, "k1", AT, activated=False))
    assert db.execute("SELECT count(*) FROM key_custom_attributes WHERE key_id = 'k1'").fetchone()[0] == 0
    assert not applied(db, key_undo.unregister(AGENT, "k2", AT, activated=False))
    assert not applied(db, key_undo.unregister(AGENT, "k3", AT, activated=False))  # activated since
    kept = {r[0] for r in db.execute("SELECT id FROM keys")}
    assert kept == {"k2", "k3"}
    assert db.execute("SELECT count(*) FROM key_custom_attributes").fetchone()[0] == 2  # rolled back whole


def test_an_added_value_is_removed_only_while_it_holds_what_was_added(db: sqlite3.Connection) -> None:
    registered_key(db, "k1")
    db.execute("UPDATE key_custom_attributes SET value = 'b' WHERE key_id = 'k1'")  # modified since
    assert not applied(db, [key_undo.unadd_custom_attribute("k1", "x-Tag", 0, "a", None)])
    assert applied(db, [key_undo.unadd_custom_attribute("k1", "x-Tag", 0, "b", None)])


def test_a_changed_or_deleted_value_comes_back_only_where_nothing_took_its_place(
    db: sqlite3.Connection,
) -> None:
    registered_key(db, "k1")
    db.execute("UPDATE key_custom_attributes SET value = 'b' WHERE key_id = 'k1'")  # what the batch wrote
    assert applied(db, [key_undo.restore_custom_attribute("k1", "x-Tag", 0, ("a", None), ("b", None))])
    db.execute("UPDATE key_custom_attributes SET value = 'c' WHERE key_id = 'k1'")  # someone else's, since
    assert not applied(db, [key_undo.restore_custom_attribute("k1", "x-Tag", 0, ("a", None), ("b", None))])

    assert not applied(db, [key_undo.readd_custom_attribute("k1", "x-Tag", 0, "a", None)])  # index taken
    db.execute("DELETE FROM key_custom_attributes WHERE key_id = 'k1'")
    assert applied(db, [key_undo.readd_custom_attribute("k1", "x-Tag", 0, "a", None)])
    assert db.execute("SELECT value FROM key_custom_attributes WHERE key_id = 'k1'").fetchone()[0] == "a"
