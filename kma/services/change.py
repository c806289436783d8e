"""A change ready to commit, described once so it can run now or later under a quorum.

Services that a quorum may have to authorise build a `Change` (statements plus what the audit
event says) instead of committing at once; the quorum service then commits it in the same batch
as the state transition of its pending quorum operation, so the two happen together or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kma.store import Stmt


@dataclass(frozen=True)
class Change:
    operation: str  # the audit operation of the change itself, e.g. "user.create"
    statements: Sequence[Stmt]
    message: str  # what changed, in a plain sentence fragment
    subject: tuple[str, str]  # what it is about, e.g. ("user", "jo")
