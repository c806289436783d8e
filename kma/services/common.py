"""Small pieces every area service uses: existence checks, PATCH statements, typed rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from kma.appliance import Appliance
from kma.errors import Conflict, NotFound
from kma.store import Stmt

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

RowT = TypeVar("RowT", bound="DataclassInstance")

TABLES = {  # noun -> table, for messages and existence checks
    "site": "sites",
    "KMA": "kmas",
    "user": "users",
    "key policy": "key_policies",
    "key group": "key_groups",
    "agent": "agents",
    "data unit": "data_units",
    "key": "keys",
    "media pool": "media_pools",
}


def require(kma: Appliance, noun: str, object_id: str) -> None:
    """404 with a plain message; the write that follows still guards itself."""
    if kma.store.query_one(f"SELECT 1 FROM {TABLES[noun]} WHERE id = ?", (object_id,)) is None:
        raise NotFound(f"There is no {noun} '{object_id}'.")


def refuse_taken(kma: Appliance, noun: str, object_id: str) -> None:
    """409 if the ID is taken, whatever its case: people read `alice` and `Alice` as one name, so
    users, agents and KMAs differ by more than upper and lower case."""
    row = kma.store.query_one(f"SELECT id FROM {TABLES[noun]} WHERE id = ? COLLATE NOCASE", (object_id,))
    if row is not None:
        same = "" if row[0] == object_id else " (names differing only in case are the same name)"
        article = "an" if noun[0] in "aeio" else "a"  # a user, an agent
        raise Conflict(f"There is already {article} {noun} '{row[0]}'{same}.")


def patch(noun: str, object_id: str, changes: Mapping[str, Any], now: int) -> Stmt:
    values = {**changes, "updated_at": now}
    sets = ", ".join(f"{k} = :{k}" for k in values)
    return Stmt(
        f"UPDATE {TABLES[noun]} SET {sets} WHERE id = :id",
        {**values, "id": object_id},
        expect=1,
        missing=True,
        refusal=f"there is no {noun} '{object_id}'",
    )


def describe(changes: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in changes.items())


def typed_row(row_class: type[RowT], values: Mapping[str, Any] | sqlite3.Row) -> RowT:
    """A service's typed row (a frozen dataclass the API's schema reads) from a store row or a
    dict made from one: its fields taken by name, any other column left out, so that a column a
    later migration adds changes no answer until the row names it."""
    return row_class(**{f.name: values[f.name] for f in fields(row_class)})
