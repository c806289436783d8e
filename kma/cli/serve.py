"""`kma serve`: run this KMA's listeners until stopped (SIGTERM, Ctrl-C, or its input closing)."""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from kma.cli.admin import open_data_dir
from kma.errors import Conflict


def add_serve(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the KMA (management and service listeners)")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--management-port", type=int, default=None, help="0 picks a free port")
    p.add_argument("--service-port", type=int, default=None, help="0 picks a free port")
    p.add_argument("--ready-file", type=Path, default=None, help="written as JSON once listening")
    p.add_argument(
        "--record-addresses",
        action="store_true",
        help="write the addresses it listens on into kma.toml (with --management-port or "
        "--service-port: the manager's local mode), so --data-dir finds it there",
    )
    p.add_argument(
        "--setup-address",
        default=None,
        metavar="HOST:PORT",
        help="where an empty data directory waits for its set-up (default 127.0.0.1:8443; "
        "0.0.0.0:8443 lets an installer's manager reach it over the network)",
    )
    p.add_argument(
        "--stop-on-stdin-close",
        action="store_true",
        help="stop cleanly once standard input closes: the manager in local mode holds it open and "
        "closes it to stop the KMA (or the OS does, when the manager ends), on every OS",
    )
    p.set_defaults(run=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from kma.cluster.rqlited import close_left_open
    from kma.cluster.witness import is_witness, serve_witness
    from kma.runtime.server import serve
    from kma.setup.listener import DEFAULT_SETUP_ADDRESS, serve_setup

    data_dir = open_data_dir(args, must_exist=False)
    setting_up = not data_dir.is_initialised()
    if setting_up:
        data_dir.create()  # private from the start; nothing else is written until set-up finishes
    close_left_open(data_dir.root)  # rqlited's own, left open by a KMA killed outright
    data_dir.check_private()
    data_dir.log_file.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(data_dir.log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)
    if args.stop_on_stdin_close:
        _stop_when_stdin_closes()
    # One process per data directory: two writers would fork the audit chain. (flock on Linux and
    # macOS, as before, so an older kma still sees the lock; LockFileEx on Windows.)
    lock = FileLock(data_dir.root / "kma.lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise Conflict(f"Another `kma serve` is already running on {data_dir.root}.") from None
    announce = lambda line: print(line, flush=True)  # noqa: E731
    with lock:
        if not setting_up and is_witness(data_dir):  # a voter with no key service: rqlited only
            from kma.api.listener import STOP_REQUESTED, note_stop_requests

            note_stop_requests()
            serve_witness(data_dir, args.ready_file, announce, STOP_REQUESTED)
            return 0
        management_port, service_port, master = args.management_port, args.service_port, None
        if setting_up:
            # --service-port 0: the port is picked now, so that set-up records the one it will be
            # (kma.toml, the KMA's entry, the wizard's last page), not the answered 5696.
            service_port = free_port() if service_port == 0 else service_port
            finished = serve_setup(
                data_dir,
                args.setup_address or DEFAULT_SETUP_ADDRESS,
                management_port,
                args.ready_file,
                announce,
                service_port,
            )
            if finished is None:
                return 0
            management_port, master = finished.management_port, finished.master
        serve(
            data_dir,
            management_port,
            service_port,
            args.ready_file,
            announce=announce,
            master=master,
            record_addresses=args.record_addresses,
        )
    return 0


def free_port() -> int:
    """A port no one listens on now (the kernel's pick on loopback)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _stop_when_stdin_closes() -> None:
    """Stop cleanly once standard input reaches its end, however the other side ended.

    A local KMA must not outlive the manager that started it, even when the manager is killed and
    could not stop it: the OS closes the manager's end of the pipe then. The same EOF is how the
    manager asks for a clean stop where there is no SIGTERM to send (Windows). SIGINT reaches the
    server's shutdown on every OS; it is raised again each second until the process has ended, in
    case the listeners were not up yet the first time.
    """

    def watch() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        while True:
            signal.raise_signal(signal.SIGINT)
            threading.Event().wait(1)

    threading.Thread(target=watch, name="kma-stdin-watch", daemon=True).start()
