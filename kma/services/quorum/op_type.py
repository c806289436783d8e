"""What a quorum-protected operation type is: how to prepare a request, and how to run it.

`prepare` runs when the request is submitted: it validates it and turns it into what approvers
see (`request`, `summary`) and what the executor will need (`payload`: hashes and sealed material,
never a clear secret, since a pending operation is stored). `execute` runs once M shares have
rebuilt the root secret (`Quorum`); it returns the `Change` to commit in the same batch as the
operation's own transition to `executed`, plus an optional step to take once that commit is done
(e.g. put the master key into this KMA's vault).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kma.appliance import Appliance
from kma.services.change import Change
from kma.services.quorum.key_split import Quorum
from kma.store import Stmt

Json = dict[str, Any]
KEPT_AS_HASH = "(given; kept only as its hash)"  # what approvers see in place of a secret


@dataclass(frozen=True)
class Prepared:
    summary: str  # plain sentence: exactly what it will change
    request: Json  # the canonical request shown to approvers (secrets replaced by a note)
    payload: Json  # what `execute` needs
    target_kma_id: str | None = None
    exclusive: bool = False  # at most one pending operation of this type per target
    statements: tuple[Stmt, ...] = ()  # written with the pending operation (e.g. its enrolments)
    handed_out: Json = field(default_factory=dict)  # shown once to the submitter, never stored
    waits: bool = False  # never runs at submission, even with M credentials: a later step is due


@dataclass(frozen=True)
class Outcome:
    change: Change
    after: Callable[[], None] | None = None  # runs once the change is committed, and only then


@dataclass(frozen=True)
class OpType:
    name: str
    prepare: Callable[[Appliance, str, Mapping[str, Any]], Prepared]  # (kma, op_id, request)
    execute: Callable[[Appliance, Quorum, str, Mapping[str, Any]], Outcome]  # (kma, quorum, op_id, payload)
    ready: Callable[[Appliance, str], bool] | None = None  # (kma, op_id): all but approvals done
