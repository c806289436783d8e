"""Views that hear of changes: a page names the kinds of thing it shows and how to read them
again; when a write changes one of them (``Operations.changed``, see :mod:`app.writes`), a page on
screen reads again at once and a page not on screen when it is next shown. A page whose data also
changes behind the manager's back (a drive enrolling, another administrator) reads again at every
show, so a page opened shows current data."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from PySide6.QtCore import QEvent, QObject, Slot
from PySide6.QtWidgets import QWidget

from app.operations import Operations


class ChangeFollower(QObject):
    """Refreshes ``page`` after a write changed one of ``kinds``."""

    def __init__(
        self,
        page: QWidget,
        ops: Operations,
        kinds: Iterable[str],
        refresh: Callable[[], None],
        *,
        every_show: bool = False,
    ) -> None:
        super().__init__(page)
        self.kinds = frozenset(kinds)
        self.every_show = every_show
        self._page = page
        self._refresh = refresh
        self.stale = False
        ops.changed.connect(self._changed)
        page.installEventFilter(self)

    @Slot(object)
    def _changed(self, change: Any) -> None:
        if not self.kinds & change.changes:
            return
        if self._page.isVisible():
            self._refresh()
        else:
            self.stale = True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        # The event's type first: a page being destroyed sends its filter events (ChildRemoved) after
        # this follower's Python attributes are gone.
        if event.type() != QEvent.Type.Show:
            return False
        if watched is self._page and (self.stale or self.every_show):
            self.stale = False
            self._refresh()
        return False
