"""Time, injectable: every lifecycle rule asks a Clock, never `time.time()` directly.

`OffsetFileClock` lets an integration test move a real KMA process through key lifecycles
(days or years) by writing a number of seconds into a file; it is only used when the
operator starts the KMA with KMA_TEST_CLOCK_FILE set, and `kma status` says so.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol


class Clock(Protocol):
    def now(self) -> int:
        """Seconds since the epoch, UTC."""
        ...


class SystemClock:
    def now(self) -> int:
        return int(time.time())


class FixedClock:
    """A clock that moves only when told to (demo data, unit tests)."""

    def __init__(self, start: int) -> None:
        self.current = start

    def now(self) -> int:
        return self.current

    def advance(self, seconds: int) -> None:
        self.current += seconds


class OffsetFileClock:
    def __init__(self, path: Path) -> None:
        self.path = path

    def offset(self) -> int:
        try:
            return int(self.path.read_text().strip() or "0")
        except (OSError, ValueError):
            return 0

    def now(self) -> int:
        return int(time.time()) + self.offset()
