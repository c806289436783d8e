"""Following list cursors: `iter_pages(client.list_keys, state="deactivated")` and `iter_all`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .errors import KmsError
from .reader import Page

T = TypeVar("T")


def iter_pages(list_method: Callable[..., Page[T]], /, **kw: Any) -> Iterator[Page[T]]:
    """Every page of a list, from `cursor` (default: the start) until `next_cursor` is None.

    Pages are fetched lazily, one request per page as the caller advances.
    """
    cursor: str | None = kw.pop("cursor", None)
    while True:
        page = list_method(cursor=cursor, **kw)
        yield page
        if page.next_cursor is None:
            return
        if page.next_cursor == cursor:
            raise KmsError("The KMA returned the same list cursor twice; stopped paging.")
        cursor = page.next_cursor


def iter_all(list_method: Callable[..., Page[T]], /, **kw: Any) -> Iterator[T]:
    """Every item of a list across all its pages."""
    for page in iter_pages(list_method, **kw):
        yield from page.items
