"""The registry of main-window pages.

A page module declares a :class:`PageSpec` and calls :func:`register`; the main window shows the
pages whose permission the KMA grants the signed-in user, in ``order``. Adding an area (Pending
quorum operations, Lock/unlock, the auditor's browser) is one new module that registers itself; no
edit to the main window. The server enforces every permission; this only hides what a user cannot do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from app.context import AppContext


@dataclass(frozen=True)
class PageSpec:
    """One area of the main window.

    ``permission``: the page shows if the KMA grants the user this permission (e.g.
    ``agents.read``; empty = every signed-in user).
    ``factory`` builds the page widget once, the first time it is shown.
    """

    key: str
    title: str
    factory: Callable[[AppContext], QWidget]
    permission: str = ""
    order: int = 100
    icon: str = ""  # a QStyle standard pixmap name, e.g. "SP_DirIcon"
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def visible_to(self, may: Callable[[str], bool]) -> bool:
        return not self.permission or may(self.permission)


_REGISTRY: dict[str, PageSpec] = {}


def register(spec: PageSpec) -> PageSpec:
    """Add (or replace, by key) a page."""
    _REGISTRY[spec.key] = spec
    return spec


def all_pages() -> list[PageSpec]:
    return sorted(_REGISTRY.values(), key=lambda s: (s.order, s.title))


def pages_for(may: Callable[[str], bool]) -> list[PageSpec]:
    return [s for s in all_pages() if s.visible_to(may)]


# -- window extensions ---------------------------------------------------------------------------
# Things an area adds to the main window as a whole rather than to its own page (a badge on its
# navigation item, a banner, a light poll): ``extend(window, ctx)`` runs once per signed-in main
# window, after the window and its error handler exist.
WindowExtension = Callable[[Any, "AppContext"], None]
_EXTENSIONS: dict[str, WindowExtension] = {}


def register_window_extension(key: str, extend: WindowExtension) -> None:
    """Add (or replace, by key) a window extension."""
    _EXTENSIONS[key] = extend


def window_extensions() -> list[WindowExtension]:
    return list(_EXTENSIONS.values())
