"""Pacing for long background work (a database backup) on a KMA that keeps serving.

A backup of a large store is seconds of copying, encrypting and writing. Done flat out on a small
machine it takes a core and the disk from the agents' requests, each of which waits for its own
audit commit's fsync. Paced, it rests between steps as long as it worked, so it never holds more
than its share and takes at most 1/share as long (the backup budget allows for that).
"""

from __future__ import annotations

import time

BACKUP_SHARE = 0.5  # of a core and of the disk, while a backup runs


class Pace:
    def __init__(self, share: float = BACKUP_SHARE) -> None:
        self._rest_per_work = (1 - share) / share
        self._since = time.perf_counter()

    def rest(self) -> None:
        """Call between steps: sleeps in proportion to the work since the last call."""
        worked = time.perf_counter() - self._since
        time.sleep(worked * self._rest_per_work)
        self._since = time.perf_counter()
