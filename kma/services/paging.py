"""Cursor paging, sorting, filtering and text search for every list, in one place.

Keyset paging (`WHERE (sort, id) > (last sort, last id)`) keeps page N as fast as page 1 on
tables of millions of rows, and a cursor stays valid while rows are added.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kma.errors import BadRequest, ValidationFailed
from kma.store import SQLiteStore

MAX_LIMIT = 1000
Row = dict[str, Any]


@dataclass(frozen=True)
class Filter:
    sql: str  # a condition using the named parameter :value
    convert: Callable[[str], Any] = str


def boolean(text: str) -> int:
    if text.lower() in ("true", "1", "yes"):
        return 1
    if text.lower() in ("false", "0", "no"):
        return 0
    raise ValidationFailed(f"'{text}' is not true or false.")


# Years 1 to 9999, what ISO 8601 can say; also keeps epoch seconds inside SQLite's 64-bit integers.
FIRST_SECOND, LAST_SECOND = -62135596800, 253402300799


def timestamp(text: str) -> int:
    """Seconds since the epoch, or an ISO 8601 time (UTC when no zone is given)."""
    try:
        seconds = int(text)
    except ValueError:  # not an integer (`int` refuses e.g. "²", which `str.isdigit` accepts)
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValidationFailed(f"'{text}' is not a time (use ISO 8601 or epoch seconds).") from None
        seconds = int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())
    if not FIRST_SECOND <= seconds <= LAST_SECOND:
        raise ValidationFailed(f"'{text}' is not a time between the years 1 and 9999.")
    return seconds


def one_of(*allowed: str) -> Callable[[str], str]:
    def convert(text: str) -> str:
        if text not in allowed:
            raise ValidationFailed(f"'{text}' is not one of: {', '.join(allowed)}.")
        return text

    return convert


@dataclass(frozen=True)
class ListSpec:
    select: str  # a full SELECT; filters, search and sort apply to its output columns
    sort_fields: Mapping[str, str]  # API field -> SQL over the output columns
    default_sort: str
    search: Sequence[str] = ()
    filters: Mapping[str, Filter] = field(default_factory=dict)
    id_sql: str = "id"
    default_order: str = "asc"


@dataclass(frozen=True)
class PageRequest:
    limit: int = 100
    cursor: str | None = None
    q: str | None = None
    sort: str | None = None
    order: str | None = None
    filters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Page:
    items: list[Row]
    next_cursor: str | None
    total: int


def _encode(values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def _decode(cursor: str) -> list[Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise BadRequest("The cursor is not valid; start again from the first page.") from None
    if not isinstance(values, list) or len(values) != 2 or not all(map(_sql_scalar, values)):
        raise BadRequest("The cursor is not valid; start again from the first page.")
    return values


def _sql_scalar(value: Any) -> bool:
    """What a cursor may hold: values SQLite can compare with (a crafted one must not reach it)."""
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return value is None or isinstance(value, str | float)


def list_page(
    store: SQLiteStore, spec: ListSpec, req: PageRequest, params: Mapping[str, Any] | None = None
) -> Page:
    if not 1 <= req.limit <= MAX_LIMIT:
        raise ValidationFailed(f"limit must be 1 to {MAX_LIMIT}.")
    sort = req.sort or spec.default_sort
    if sort not in spec.sort_fields:
        raise ValidationFailed(f"Cannot sort by '{sort}'; use one of: {', '.join(spec.sort_fields)}.")
    order = (req.order or spec.default_order).lower()
    if order not in ("asc", "desc"):
        raise ValidationFailed("order must be asc or desc.")
    bound: dict[str, Any] = dict(params or {})
    where: list[str] = []
    for name, value in req.filters.items():
        if name not in spec.filters:
            raise ValidationFailed(f"Unknown filter '{name}'.")
        flt = spec.filters[name]
        key = f"f_{name}"
        where.append(flt.sql.replace(":value", f":{key}"))
        bound[key] = flt.convert(value)
    if req.q and "\x00" in req.q:  # SQLite's LIKE would stop at the NUL and match every row
        raise ValidationFailed("The search text contains a NUL character.")
    if req.q:
        bound["q"] = "%" + req.q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append("(" + " OR ".join(f"{c} LIKE :q ESCAPE '\\'" for c in spec.search) + ")")
    base_where = " AND ".join(where) or "1"
    source = f"({spec.select})"
    total = int(store.scalar(f"SELECT count(*) FROM {source} WHERE {base_where}", bound))

    sort_sql, id_sql = spec.sort_fields[sort], spec.id_sql
    cmp = ">" if order == "asc" else "<"
    page_where = base_where
    if req.cursor:
        bound["c_sort"], bound["c_id"] = _decode(req.cursor)
        page_where += f" AND ({sort_sql} {cmp} :c_sort OR ({sort_sql} = :c_sort AND {id_sql} {cmp} :c_id))"
    sql = (
        f"SELECT *, {sort_sql} AS _sort FROM {source} WHERE {page_where} "
        f"ORDER BY {sort_sql} {order}, {id_sql} {order} LIMIT {req.limit + 1}"
    )
    rows = [dict(r) for r in store.query(sql, bound)]
    next_cursor = None
    if len(rows) > req.limit:
        rows = rows[: req.limit]
        next_cursor = _encode([rows[-1]["_sort"], rows[-1]["id"]])
    for row in rows:
        del row["_sort"]
    return Page(rows, next_cursor, total)
