"""The one reader of the KMA's answers: JSON into the frozen dataclasses of `wire.py` (generated from
the KMA's OpenAPI document by scripts/generate-client-models.py).

A dataclass field's type says how its value is read: times become timezone-aware `datetime`s (a
time without an offset is taken as UTC, which is what the contract says every time is), lists
become tuples so the objects are truly immutable, and nested objects are read the same way. Keys
this client does not know are ignored, so a newer KMA may add fields; a missing field without a
default, or a value of the wrong type, is an error (`ValueError`, `TypeError` or `KeyError`: the
client reports an unreadable answer). Enumerations stay plain strings: a newer KMA may add a value.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar, Union, get_args, get_origin, get_type_hints

JsonObject = Mapping[str, Any]
T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: `next_cursor` is None on the last page; `total` counts the matches,
    or, when `total_exact` is false, is what the KMA counted before it stopped: more match."""

    items: list[T]
    next_cursor: str | None
    total: int
    total_exact: bool = True
    # A search that stopped within its time short of the end (the audit trail's free text): the time
    # of the last row it looked at; `next_cursor` searches on from there. None: searched to the end.
    searched_to: datetime | None = None


def parse_time(value: str) -> datetime:
    """An ISO 8601 time from the KMA as an aware `datetime` (UTC when no offset is given)."""
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def read(kind: type[T], value: Any) -> T:
    """`value` (parsed JSON) as a `kind`: a generated dataclass, `Page[Item]`, `tuple[Item, ...]`."""
    result: T = _read(kind, value, {})
    return result


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _read(kind: Any, value: Any, bound: Mapping[Any, Any]) -> Any:  # noqa: PLR0911, PLR0912  one case per type
    kind = bound.get(kind, kind) if isinstance(kind, TypeVar) else kind
    origin, args = get_origin(kind), get_args(kind)
    if kind is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (option,) = (a for a in args if a is not type(None))
        return _read(option, value, bound)
    if kind is type(None):
        if value is not None:
            raise TypeError(f"expected nothing, got {value!r}")
        return None
    if origin in (tuple, list):
        items = [_read(args[0], v, bound) for v in _expect(list, value)]
        return tuple(items) if origin is tuple else items
    if origin in (Mapping, dict):
        return {str(k): _read(args[1], v, bound) for k, v in _expect(dict, value).items()}
    if kind is datetime:
        return parse_time(_expect(str, value))
    if kind is float:
        return float(_expect((int, float), value))
    if kind in (str, bool, int):
        if isinstance(value, bool) and kind is int:
            raise TypeError(f"expected a number, got {value!r}")
        return _expect(kind, value)
    cls = origin or kind
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        params = getattr(cls, "__parameters__", ())
        return _object(cls, _expect(dict, value), dict(zip(params, args, strict=False)))
    raise TypeError(f"cannot read a {kind!r}")


def _object(cls: type, value: JsonObject, bound: Mapping[Any, Any]) -> Any:
    hints = _hints(cls)
    given = {}
    for f in dataclasses.fields(cls):
        if f.name in value:
            try:
                given[f.name] = _read(hints[f.name], value[f.name], bound)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{cls.__name__}.{f.name}: {exc}") from exc
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise KeyError(f"{cls.__name__} without {f.name}")
    return cls(**given)


def _expect(kind: Any, value: Any) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"expected {getattr(kind, '__name__', kind)}, got {type(value).__name__}")
    return value


def reader(kind: type[T]) -> Callable[[Any], T]:
    """`read` of `kind`, for a call that says how its answer is read."""
    return functools.partial(read, kind)


def read_page(item: type[T], value: Any) -> Page[T]:
    """A `Page` of `item`s."""
    (parameter,) = getattr(Page, "__parameters__")  # noqa: B009  mypy knows no __parameters__
    page: Page[T] = _object(Page, _expect(dict, value), {parameter: item})
    return page
