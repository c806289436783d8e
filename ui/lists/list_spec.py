"""What a list page declares (`ListSpec`): its columns, filters, actions and how to fetch its rows;
`ui/lists/list_page.py` is the one page that shows any of them. The KMA's side of the same list is a
`ListQuery` (kma/services/paging.py). An action's or the details' first argument is the
`ListPage` showing the list; ``Row`` is the wire class the list shows (``Key``).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any, Generic

from PySide6.QtCore import Qt

from kms_client import KmsClient, Page
from ui.lists.paged_model import Column, Row


@dataclass(frozen=True)
class FilterSpec:
    """A drop-down filter sent to the KMA as ``param=value`` (first choice: no filter)."""

    param: str
    label: str
    choices: list[tuple[str, Any]]
    # more choices read from the KMA when the page opens (worker thread), after the fixed ones
    load_choices: Callable[[Any], list[tuple[str, Any]]] | None = None


@dataclass(frozen=True)
class ActionSpec(Generic[Row]):
    """Something the user can do to the selected row(s) (or to the list, ``needs="none"``)."""

    text: str
    run: Callable[[Any, Any], Any]  # (the ListPage, the selected Row; None when needs="none")
    permission: str = ""  # who sees it: whom the KMA grants this (empty = whoever sees the page)
    needs: str = "one"  # "one" | "none"
    enabled: Callable[[Row], bool] | None = None  # for the selected object
    shortcut: str = ""
    toolbar: bool = False
    danger: bool = False


@dataclass
class ListSpec(Generic[Row]):
    """Everything specific to one area's list; ``Row`` is the wire class it shows (``Key``)."""

    key: str
    title: str
    noun: str  # "key", "agent": used in messages
    columns: list[Column]
    fetch: Callable[[KmsClient], Callable[..., Page[Row]]]  # client -> client.list_things
    get: Callable[[KmsClient], Callable[[str], Row]] | None = None  # client -> client.get_thing
    subtitle: str = ""
    plural: str = ""  # "keys", "KMAs", "audit events" (default: title in lower case)
    filters: list[FilterSpec] = field(default_factory=list)
    actions: list[ActionSpec[Row]] = field(default_factory=list)
    details: Callable[[Any, Row], Any] | None = None
    page_size: int = 200
    default_sort: tuple[str, Qt.SortOrder] | None = None
    searchable: bool = True
    fixed_filters: dict[str, Any] = field(default_factory=dict)
    sort_fields: frozenset[str] | None = None  # what the KMA sorts by; None = every column
    # The KMA's own pairing of sorts with filters (its ListSpec.filtered_sorts): another sort than
    # the default goes only with the filters named for it. None: every sort with every filter.
    filtered_sorts: dict[str, frozenset[str]] | None = None
    # The kinds of thing the list shows (app.writes.KINDS; default: its key): a write that changes
    # one of them makes the list read again.
    shows: AbstractSet[str] = frozenset()
    # The KMA or the drives change it with no write from this manager (an agent enrolling, a
    # scheduled backup): polled while on screen. Other lists read again when a write of this
    # manager changed them and whenever they are shown.
    live: bool = False

    def __post_init__(self) -> None:
        self.shows = frozenset(self.shows or {self.key})
        if self.sort_fields is not None:
            allowed = self.sort_fields
            self.columns = [
                replace(c, sortable=c.sortable and (c.sort_field or c.key) in allowed) for c in self.columns
            ]
