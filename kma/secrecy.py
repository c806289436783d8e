"""Keeping a serving KMA's memory to itself: it holds the master key, the cluster CA's key and, with
an HSM, the token's PIN, none of which may reach a core file or another process of its user.

`kma serve` makes no core file (RLIMIT_CORE 0: a crash leaves its traceback in the log, not its
memory on disk) and, on Linux, is not dumpable (prctl PR_SET_DUMPABLE 0: no core file either way, and
another process of the same user can neither attach to it nor read its /proc/PID/mem or environ).
rqlited, which it starts, holds no key and is an executable of its own (exec resets the flag).
The PIN itself is read from its file or the OS keyring (kma/crypto/hsm.py), never from the command
line, the environment or kma.toml, and never logged.
"""

from __future__ import annotations

import logging
import resource
import sys

log = logging.getLogger(__name__)
PR_SET_DUMPABLE = 4


def keep_memory_private() -> None:
    """No core file, and no other process of this user looking in (best effort, logged if refused)."""
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError) as exc:
        log.warning("could not turn off core files: %s", exc)
    if sys.platform.startswith("linux"):
        import ctypes

        if ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            log.warning("could not make the KMA process non-dumpable (errno %d)", ctypes.get_errno())
