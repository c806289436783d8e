"""`kma serve`: run this KMA's listeners until stopped (SIGTERM or Ctrl-C)."""

from __future__ import annotations

import argparse
import fcntl
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from kma.cli.admin import _data_dir
from kma.errors import Conflict


def add_serve(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the KMA (management and service listeners)")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--management-port", type=int, default=None, help="0 picks a free port")
    p.add_argument("--service-port", type=int, default=None, help="0 picks a free port")
    p.add_argument("--ready-file", type=Path, default=None, help="written as JSON once listening")
    p.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="stop when process PID (the manager in local mode) is no longer our parent",
    )
    p.set_defaults(run=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from kma.server import serve

    data_dir = _data_dir(args)
    data_dir.check_private()
    data_dir.log_file.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(data_dir.log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)
    if args.parent_pid is not None:
        _stop_with_parent(args.parent_pid)
    # One process per data directory: two writers would fork the audit chain.
    with open(data_dir.root / "kma.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Conflict(f"Another `kma serve` is already running on {data_dir.root}.") from None
        serve(data_dir, args.management_port, args.service_port, args.ready_file,
              announce=lambda line: print(line, flush=True))  # fmt: skip
    return 0


def _stop_with_parent(parent: int) -> None:
    """Stop cleanly (SIGTERM to ourselves) once `parent` is gone, however it ended.

    A local KMA must not outlive the manager that started it, even when the manager is killed
    and could not stop it. The parent's PID comes from the parent itself: had it died before we
    looked, our own `getppid()` would already name another process.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="kma-parent-watch", daemon=True).start()
