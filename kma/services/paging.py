"""Cursor paging, sorting, filtering and text search for every list, in one place.

Keyset paging (`WHERE (sort, id) > (last sort, last id)`) keeps page N as fast as page 1 on
tables of millions of rows, and a cursor stays valid while rows are added. Each list offers the
sorts and filters an index serves (tests/integration/test_list_plans.py checks every one on a
large store), and counts its matches only up to `COUNT_LIMIT`: beyond that a page says "more
than" (`total_exact` false) rather than read a million index entries to say how many.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from kma.errors import BadRequest, ValidationFailed
from kma.store import fts
from kma.store.base import Store

MAX_LIMIT = 1000
COUNT_LIMIT = 10_000
Row = dict[str, Any]


@dataclass(frozen=True)
class Filter:
    sql: str  # a condition using the named parameter :value
    convert: Callable[[str], Any] = str
    # Instead of `sql`: one condition per allowed (converted) value, for values that are not
    # stored as such (a key's state is a condition on its times, which an index can serve).
    choices: Mapping[Any, str] | None = None
    # The rows the filter matches, when an index of their own holds them but not in the list's order
    # (a partial index of a key state's rows, an expression index of a media pool's volsers): the
    # condition written so that the planner reads them from that index (a free filter's, with
    # :value), or, for a choice, per value that has one. Walking the order index for them read every
    # row that does not match (the whole key pool, every data unit); so they are found, and counted,
    # in their own index, in its order (an index holding the list's ID too: nothing else is read),
    # and when they are at most COUNT_LIMIT the page takes the first of them in its order, by their
    # IDs. `sql` is then the test of a row, which the planner should not prefer to the order index
    # when the matches are many (it would sort them all for each page).
    indexed: str | Mapping[Any, str] | None = None

    def condition(self, text: str, key: str) -> tuple[str, dict[str, Any], str | None]:
        """The SQL condition for the filter's `text`, its parameters, and the condition's indexed
        form (`indexed`) if it has one."""
        value = self.convert(text)
        indexed = self.indexed.get(value) if isinstance(self.indexed, Mapping) else self.indexed
        if self.choices is not None:
            return self.choices[value], {}, indexed
        named = f":{key}"
        return self.sql.replace(":value", named), {key: value}, indexed and indexed.replace(":value", named)


def choice(
    conditions: Mapping[Any, str],
    convert: Callable[[str], Any] | None = None,
    own_index: frozenset[Any] = frozenset(),
) -> Filter:
    """A filter with a closed set of values, each its own SQL condition; those in `own_index` are
    counted and found in an index of their own (`Filter.indexed`)."""
    return Filter("", convert or one_of(*conditions), conditions, {v: conditions[v] for v in own_index})


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
class SearchIndex:
    """Where a list's search finds the rows that may match, from trigram indexes (migration 0035).

    `rows` is a SELECT of `key` values (a column of the list) named `found`, given
    `:search_phrase`, the search text as an FTS5 phrase, and `:search`, its LIKE pattern. It may
    return rows that do not match (the index folds case wider than LIKE does), never miss one, and
    returns a row that matches only once: the list's LIKE still decides, and its matches are
    counted from `rows`.
    """

    key: str
    rows: str


def like_any(columns: Sequence[str]) -> str:
    """SQL: one of `columns` holds the search text (`:search`, a LIKE pattern)."""
    return "(" + " OR ".join(f"{c} LIKE :search ESCAPE '\\'" for c in columns) + ")"


def indexed_rows(name: str, found: str) -> str:
    """`SearchIndex.rows` of a table with its own search index `name`: `found` (a column, or rowid)
    of the rows the index may match, and of the rows above its mark, which it does not hold yet
    (the store's writer indexes them in the background, kma/store/fts.py), those LIKE finds in
    the indexed columns: a few, read by rowid."""
    index = fts.LISTS[name]
    return (
        f"SELECT {found} AS found FROM {name} WHERE {name} MATCH :search_phrase UNION ALL "
        f"SELECT {found} FROM {index.table} WHERE rowid > ({index.mark_sql}) AND {like_any(index.columns)}"
    )


TRIGRAM = 3  # the index holds every three characters: shorter text cannot be looked up in it


@dataclass(frozen=True)
class ListQuery:
    """The SQL of one list the API pages (its select, sorts, filters and search); the manager's
    page that shows it is a `ListSpec` (ui/lists/list_page.py)."""

    select: str  # a full SELECT; filters, search and sort apply to its output columns (`listed`)
    # API field -> SQL over the output columns, or several (ties in the first ordered by the next),
    # so that one index (a, b, id) serves both a filter on a and the sort by a.
    sort_fields: Mapping[str, str | tuple[str, ...]]
    default_sort: str
    search: Sequence[str] = ()  # the columns the search text is looked for in (LIKE)
    filters: Mapping[str, Filter] = field(default_factory=dict)
    id_sql: str = "id"
    default_order: str = "asc"
    # The default sort goes with every filter. Another sort goes only with the filters named here:
    # those an index holds in that order. Any other pairing would sort all its matches for each
    # page (a million keys in one state), so the list refuses it and says what it offers instead.
    filtered_sorts: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # the search from an index; without it, `search` is tested row by row
    search_index: SearchIndex | None = None


@dataclass(frozen=True)
class PageRequest:
    limit: int = 100
    cursor: str | None = None
    search: str | None = None  # the search box's text
    sort: str | None = None
    order: str | None = None
    filters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Page:
    items: list[Row]
    next_cursor: str | None
    total: int
    total_exact: bool = True  # false: there are more than `total` matches (counting stopped)
    # A search that ran out of its time before the end of the list (the audit trail's free text):
    # the time (epoch seconds) of the last row it looked at; `next_cursor` searches on from there.
    searched_to: int | None = None

    def with_items(self, items: list[Row]) -> Page:
        """The same page with its rows as the service shows them."""
        return replace(self, items=items)


def encode_cursor(values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, size: int = 2) -> list[Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise BadRequest("The cursor is not valid; start again from the first page.") from None
    if not isinstance(values, list) or len(values) != size or not all(map(_sql_scalar, values)):
        raise BadRequest("The cursor is not valid; start again from the first page.")
    return values


def _sql_scalar(value: Any) -> bool:
    """What a cursor may hold: values SQLite can compare with (a crafted one must not reach it)."""
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return value is None or isinstance(value, str | float)


def _after(columns: Sequence[str], values: Sequence[Any], order: str) -> str:
    """SQL: the row comes after the cursor (`:c0`, `:c1`, ...) in `ORDER BY columns` (each in
    `order`). SQLite puts NULL first ascending and last descending; the last column (the ID)
    is never NULL."""
    first, rest = columns[0], columns[1:]
    if not rest:
        return f"{first} {'>' if order == 'asc' else '<'} :c{len(values) - 1}"
    at = f":c{len(values) - len(columns)}"
    after_ties = _after(rest, values, order)
    if values[len(values) - len(columns)] is None:
        if order == "desc":  # NULLs come last: only the NULL rows' tail is left
            return f"({first} IS NULL AND {after_ties})"
        return f"({first} IS NOT NULL OR ({first} IS NULL AND {after_ties}))"
    # Descending, the NULLs after the cursor are in `coalesce(...)`, not a separate OR term, which
    # would have the planner fetch the two sets apart and sort them together.
    beyond = f"{first} > {at}" if order == "asc" else f"coalesce({first} < {at}, 1)"
    return f"({beyond} OR ({first} = {at} AND {after_ties}))"


def _search(spec: ListQuery, search: str, where: list[str], bound: dict[str, Any]) -> SearchIndex | None:
    """Add the search for `search` to `where` and `bound`; the index that finds its rows, if any."""
    if "\x00" in search:  # SQLite's LIKE would stop at the NUL and match every row
        raise ValidationFailed("The search text contains a NUL character.")
    bound["search"] = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    where.append(like_any(spec.search))
    if spec.search_index is None or len(search) < TRIGRAM:
        return None
    bound["search_phrase"] = '"' + search.replace('"', '""') + '"'  # an FTS5 phrase: its text taken as is
    return spec.search_index


def _count(
    store: Store, source: str, where: str, ordered: str, index: SearchIndex | None, bound: Mapping[str, Any]
) -> int:
    """How many rows of `source` meet `where`, up to COUNT_LIMIT + 1."""
    if index is not None:
        # Counted from the index's candidates as it gives them, stopping as soon: the page's order
        # index may hold 10,000 matches of a fragment spread over a million keys.
        counting = (
            f"SELECT 1 FROM ({index.rows}) AS candidate CROSS JOIN {source} "
            f"WHERE {index.key} = candidate.found AND {where}"
        )
    else:  # counted in the page's order: the count reads the index the page reads, and stops as soon
        counting = f"SELECT 1 FROM {source} WHERE {where} ORDER BY {ordered}"
    return int(store.scalar(f"SELECT count(*) FROM ({counting} LIMIT {COUNT_LIMIT + 1})", bound))


def _few_candidates(store: Store, index: SearchIndex, bound: Mapping[str, Any]) -> bool:
    """Whether the search index finds at most COUNT_LIMIT rows that may match. The page reads those
    from the index and sorts them; more match often enough that walking the page's order index,
    testing each row, finds a page soon."""
    found = store.scalar(f"SELECT count(*) FROM ({index.rows} LIMIT {COUNT_LIMIT + 1})", bound)
    return int(found) <= COUNT_LIMIT


def _filters(
    spec: ListQuery, req: PageRequest, sort: str, bound: dict[str, Any]
) -> tuple[list[str], list[str], bool]:
    """The request's filters as conditions (their parameters added to `bound`): the page's, the
    count's (each in its indexed form if it has one), and whether one has (`Filter.indexed`)."""
    where: list[str] = []
    counted_where: list[str] = []
    own = False
    for name, value in req.filters.items():
        if name not in spec.filters:
            raise ValidationFailed(f"Unknown filter '{name}'.")
        if sort != spec.default_sort and name not in spec.filtered_sorts.get(sort, ()):
            raise ValidationFailed(
                f"Cannot sort by '{sort}' while filtering by '{name}': no index holds those rows in "
                f"that order. Sort by '{spec.default_sort}', or remove the filter."
            )
        condition, filter_params, indexed = spec.filters[name].condition(value, f"f_{name}")
        where.append(condition)
        counted_where.append(indexed or condition)
        bound.update(filter_params)
        own = own or indexed is not None
    return where, counted_where, own


def list_page(
    store: Store, spec: ListQuery, req: PageRequest, params: Mapping[str, Any] | None = None
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
    where, counted_where, own = _filters(spec, req, sort, bound)
    index = _search(spec, req.search, where, bound) if req.search else None
    base_where = " AND ".join(where) or "1"
    source = f"({spec.select}) AS listed"
    chosen = spec.sort_fields[sort]
    columns = tuple(dict.fromkeys((*((chosen,) if isinstance(chosen, str) else chosen), spec.id_sql)))
    ordered = ", ".join(f"{c} {order}" for c in columns)
    found = "[]"
    if own and not req.search:  # found, and so counted, in their own index, in its order
        matching = f"SELECT {spec.id_sql} AS found FROM {source} WHERE {' AND '.join(counted_where)}"
        counting = f"SELECT count(*), json_group_array(found) FROM ({matching} LIMIT {COUNT_LIMIT + 1})"
        answer = store.query(counting, bound)
        counted, found = (int(answer[0][0]), str(answer[0][1])) if answer else (0, found)
    else:
        counted = _count(store, source, base_where, ordered, index, bound)
    page_where = base_where
    if index is not None and counted <= COUNT_LIMIT and _few_candidates(store, index, bound):
        page_where += f" AND {index.key} IN ({index.rows})"
    elif own and counted <= COUNT_LIMIT:  # the rows the count found, taken in the page's order by their ID
        bound["found"] = found
        page_where += f" AND {spec.id_sql} IN (SELECT value FROM json_each(:found))"
    if req.cursor:
        values = decode_cursor(req.cursor, len(columns))
        bound.update({f"c{i}": v for i, v in enumerate(values)})
        page_where += f" AND {_after(columns, values, order)}"
    sorted_by = ", ".join(f"{c} AS _s{i}" for i, c in enumerate(columns))
    sql = f"SELECT *, {sorted_by} FROM {source} WHERE {page_where} ORDER BY {ordered} LIMIT {req.limit + 1}"
    rows = [dict(r) for r in store.query(sql, bound)]
    next_cursor = None
    if len(rows) > req.limit:
        rows = rows[: req.limit]
        next_cursor = encode_cursor([rows[-1][f"_s{i}"] for i in range(len(columns))])
    for row in rows:
        for i in range(len(columns)):
            del row[f"_s{i}"]
    return Page(rows, next_cursor, min(counted, COUNT_LIMIT), counted <= COUNT_LIMIT)
