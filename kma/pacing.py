"""Pacing for long background work (a database backup, its copy, its removal) on a serving KMA.

A backup of a large store is seconds of copying, encrypting and writing. Done flat out on a small
machine it takes a core and the disk from the agents' requests, each of which waits for its own
audit commit's fsync. Paced, it rests between steps as long as it worked, so it never holds more
than its share and takes at most 1/share as long (the backup budget allows for that).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

BACKUP_SHARE = 0.5  # of a core and of the disk, while a backup runs
# A backup folder may be writable by others: a name there is never followed to another file.
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; on Windows a planted link needs admin rights


STEP_S = 0.002  # of Python work between two hand-overs to the KMA's other threads (see tick)
HAND_OVER_S = 0.0002


class Pace:
    def __init__(self, share: float = BACKUP_SHARE) -> None:
        self._rest_per_work = (1 - share) / share
        self._since = self._handed = time.perf_counter()

    def tick(self) -> None:
        """Call often inside a step of Python work (a row read, a data unit written): every 2 ms it
        lets the KMA's other threads run. A drive's request needs the interpreter several times
        (its TLS reads and writes, its query, its audit commit on the writer thread), and a thread
        that wants it from a busy one waits Python's switch interval (5 ms) each time: a request
        during an unbroken step of work took 12 times as long as idle (session 14's export)."""
        now = time.perf_counter()
        if now - self._handed >= STEP_S:
            time.sleep(HAND_OVER_S)
            self._handed = time.perf_counter()

    def rest(self) -> None:
        """Call between steps: sleeps in proportion to the work since the last call."""
        worked = time.perf_counter() - self._since
        time.sleep(worked * self._rest_per_work)
        self._since = time.perf_counter()


SYNC_STEP = 1 << 20  # bytes of a large file written between two fdatasyncs (see settle)
SHRINK_STEP = 64 << 20  # bytes freed per step when a large file is removed


def settle(fd: int, start: int, end: int) -> None:
    """Put the bytes written from `start` to `end` on disk now and drop them from the page cache.
    A large file written whole and flushed at once (by fsync, or by the kernel 30 s later) queues
    a gigabyte before the WAL fsyncs of the KMA's own commits (every agent request waits for
    one); settled a MiB at a time, it never does, and it does not push the store out of the cache."""
    os.fdatasync(fd)
    os.posix_fadvise(fd, start, end - start, os.POSIX_FADV_DONTNEED)


def copy_gradually(source: Path, target: Path) -> None:
    """Copy a large file (a backup into the schedule's folder), settled and paced as it goes, into
    a new file of this account's only: anything already at `target` (a link someone planted)
    raises FileExistsError and is left alone."""
    pace = Pace()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW | getattr(os, "O_BINARY", 0), 0o600)
    with source.open("rb") as src, os.fdopen(fd, "wb") as dst:
        done = 0
        for chunk in iter(lambda: src.read(SYNC_STEP), b""):
            dst.write(chunk)
            dst.flush()
            settle(dst.fileno(), done, done + len(chunk))
            done += len(chunk)
            pace.rest()


def remove_gradually(path: Path) -> None:
    """Remove a large file (a backup) without holding back the KMA's commits for long: freeing a
    gigabyte's blocks at once is one long journal commit (longer on a file system that trims
    freed blocks) that every WAL fsync waits for; shrunk in steps, each wait is short. A missing
    file is no error. Only a regular file with no other name is shrunk: a link planted in its
    place (symbolic or hard) loses its name here, and what it points to is left whole."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | NO_FOLLOW)
    except FileNotFoundError:
        return
    except OSError:  # a symbolic link (ELOOP), a FIFO without a reader: nothing of ours to shrink
        path.unlink(missing_ok=True)
        return
    try:
        found = os.fstat(fd)
        size = found.st_size if stat.S_ISREG(found.st_mode) and found.st_nlink == 1 else 0
        while size > SHRINK_STEP:
            size -= SHRINK_STEP
            os.ftruncate(fd, size)
            os.fdatasync(fd)
    finally:
        os.close(fd)
    path.unlink(missing_ok=True)
