"""The manager's writes to a KMA, declared per area (as Anki's ``aqt/operations``).

A write says what it calls, the kinds of thing it changes and what the user is told once it
worked; pages run it with ``ctx.ops.write(destroy_key(key_id, comment), parent=page)``. Once the KMA
said yes, :class:`~app.operations.Operations` announces ``changed`` with those kinds (Anki's
``operation_did_execute``) and every page showing one of them reads it again (:mod:`app.changes`),
so a call site passes no success lambda for the usual case.

Most writes are one client call, named by the client's method (``Write(KmsClient.destroy_key,
...)``: mypy checks the name, and the method is named as the route it calls). A write of several
steps is a function ``(worker, *args)`` that runs on the write lane's worker thread with the
:class:`~app.operations.OpContext` it is given, and touches no widget.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from app.operations import OpContext
from kms_client import KmsClient

# What a write can change, and what a page can show (the change signal's vocabulary).
KINDS = frozenset(
    {
        "agents",
        "alerts",
        "audit",
        "backups",
        "data_units",
        "key_groups",
        "key_policies",
        "keys",
        "kmas",
        "media_pools",
        "quorum",
        "sites",
        "transfer",
        "users",
    }
)


@dataclass(frozen=True)
class Write:
    """One named write. ``call``: a method of :class:`KmsClient` (``KmsClient.destroy_key``), or a
    function ``(worker, *args)`` for a write of several steps. ``done``: the status-bar message,
    formatted with the arguments (``"Key {0} destroyed."``)."""

    call: Callable[..., Any]
    changes: AbstractSet[str]
    done: str = ""

    @property
    def client_method(self) -> str | None:
        """The name of the client method this write is, or None for a write of several steps."""
        name = getattr(self.call, "__name__", "")
        return name if getattr(KmsClient, name, None) is self.call else None

    def __post_init__(self) -> None:
        unknown = set(self.changes) - KINDS
        if unknown:
            raise ValueError(f"a write changes only {sorted(KINDS)}, not {sorted(unknown)}")
        object.__setattr__(self, "changes", frozenset(self.changes))

    def __call__(self, *args: Any, **options: Any) -> Change:
        return Change(self, args, options)


@dataclass(frozen=True)
class Change:
    """A write with its arguments: what ``ops.write`` runs on the write lane."""

    write: Write
    args: tuple[Any, ...]
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def changes(self) -> AbstractSet[str]:
        return self.write.changes

    @property
    def message(self) -> str:
        return self.write.done.format(*self.args, **self.options)

    def __call__(self, worker: OpContext) -> Any:  # worker thread: no widgets
        method = self.write.client_method
        if method is not None:  # by name: the worker's client may be a KMA's own, or a test's
            return getattr(worker.client, method)(*self.args, **self.options)
        return self.write.call(worker, *self.args, **self.options)
