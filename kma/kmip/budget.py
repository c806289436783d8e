"""What one request message may cost: the size of its answer, and its reads in the audit trail.

A message of a few kilobytes may ask for a great deal (1,300 Locates of 1,000 IDs each: a 52 MB
answer, seconds of work and a thousand audit events). So the answer's payloads are counted as the
items run: once they would pass the client's Maximum Response Size, or the listener's
`kmip_max_answer` (`MAX_ANSWER` by default) when it asks for more or says nothing, the item that
passes it fails Response Too Large and the items after it are not run (each answered so, in one
audit event for them all). And the reads of one message past the first `READS_IN_FULL` (Locate,
Get Attributes, Get Attribute List, Check, Query, Discover Versions) are summarised in one event at
its end; a Get, which sends key material, is recorded each time, naming its key. A summarised read
waits for no audit commit, so it rests as long as it worked instead (kma/kmip/operations.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kma.kmip.enums import ResultReason
from kma.kmip.messages import KmipError

MAX_ANSWER = 1 << 20  # bytes of one message's answer payloads: a Locate of 1,000 IDs is ~48 KB
READS_IN_FULL = 16  # reads of one message recorded each in the audit trail; the rest summarised
SUMMARISED = frozenset(
    {
        "kmip.locate",
        "kmip.get_attributes",
        "kmip.get_attribute_list",
        "kmip.check",
        "kmip.query",
        "kmip.discover_versions",
    }
)


@dataclass
class MessageBudget:
    limit: int = MAX_ANSWER
    spent: int = 0  # bytes of the answer's payloads so far
    full: bool = False  # an item passed the limit: the ones after it are not run
    not_run: int = 0
    reads_in_full: int = 0
    summarised: Counter[str] = field(default_factory=Counter)

    @classmethod
    def asked(cls, max_response_size: int | None, most: int = MAX_ANSWER) -> MessageBudget:
        """The client's Maximum Response Size, but never more than this KMA answers (`most`: the
        listener's `kmip_max_answer`, kma/limits.py)."""
        return cls(most if max_response_size is None else min(max_response_size, most))

    def spend(self, size: int) -> None:
        """Count an item's answer; refuse it (and what follows) when it passes the limit."""
        if self.spent + size > self.limit:
            self.full = True
            raise KmipError(
                ResultReason.RESPONSE_TOO_LARGE,
                f"the answer would pass {self.limit:,} bytes (the client's Maximum Response Size or this "
                "KMA's limit); ask for less in one message (fewer items, a Maximum Items)",
            )
        self.spent += size

    def summarise(self, operation: str) -> bool:
        """Whether this read goes in the message's summary rather than an event of its own."""
        if operation not in SUMMARISED:
            return False
        if self.reads_in_full < READS_IN_FULL:
            self.reads_in_full += 1
            return False
        self.summarised[operation] += 1
        return True

    def summary(self) -> str | None:
        """The one event's message for what was summarised or not run; None when nothing was."""
        parts = []
        if self.summarised:
            reads = ", ".join(
                f"{n:,} {op.removeprefix('kmip.')}" for op, n in sorted(self.summarised.items())
            )
            parts.append(f"{sum(self.summarised.values()):,} more reads in this message, summarised: {reads}")
        if self.not_run:
            parts.append(
                f"{self.not_run:,} items not run: the answer had reached its limit of {self.limit:,} bytes"
            )
        return "; ".join(parts) or None
