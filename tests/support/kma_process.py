"""A real KMA in a child process, on loopback, over TLS: what integration tests talk to.

`RunningKma.demo(tmp)` runs `kma demo` then `kma serve --management-port 0 --ready-file F`
and waits for the ready file; `client(user)` returns a signed-in `KmsClient` pinned to the
cluster CA. The test clock file lets a test move the server's time forward.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kms_client import KmsClient, Trust
from tests.support.waiting import wait_until

READY_TIMEOUT = 60.0  # a bound, not a measure: three xdist workers (and coverage, in CI) share two cores


def run_kma(
    *args: str, env: dict[str, str] | None = None, check: bool = True, source: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m kma ARGS`; `source`: a checkout whose kma runs instead of this one."""
    return subprocess.run(
        [sys.executable, "-m", "kma", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {}), **_source_env(source)},
        cwd=source,
        check=check,
        timeout=120,
    )


def _source_env(source: Path | None) -> dict[str, str]:
    # `python -m` puts the working directory first on sys.path; PYTHONPATH covers the KMA's children
    return {} if source is None else {"PYTHONPATH": str(source)}


def _ready_info(ready: Path) -> dict[str, Any] | None:
    try:
        info: dict[str, Any] = json.loads(ready.read_text())
    except (FileNotFoundError, ValueError):  # not there yet, or being replaced
        return None
    return info


@dataclass
class RunningKma:
    """A `kma serve` process this process started; stopped by `stop`, or when this process exits
    (an exception or a signal ending a bench or a test run) if nothing stopped it before."""

    data_dir: Path
    demo: dict[str, Any] = field(default_factory=dict)
    clock_file: Path | None = None
    process: subprocess.Popen[str] | None = None
    address: str = ""
    ca_pem: str = ""
    fingerprint: str = ""
    setup: dict[str, Any] = field(default_factory=dict)  # in set-up mode: its ready file
    source: Path | None = None  # a checkout whose kma runs (a bench's baseline commit); None: this one
    service_port: int = 0  # 0: a free one at each start; a cluster's KMAs keep theirs (agents know them)
    _clients: list[KmsClient] = field(default_factory=list)

    @classmethod
    def demo_in(
        cls,
        tmp: Path,
        test_clock: bool = True,
        source: Path | None = None,
        listeners: dict[str, Any] | None = None,
        hsm: Path | None = None,
    ) -> RunningKma:
        """A demo KMA, started; `listeners` sets kma.toml's [listeners] (kma/limits.py) first;
        `hsm`: a file whose [hsm] table puts its master key in a token (tests/support/softhsm.py)."""
        data_dir = tmp / "kma"
        more = ("--hsm", str(hsm)) if hsm else ()
        info = json.loads(run_kma("demo", "--data-dir", str(data_dir), "--json", *more, source=source).stdout)
        kma = cls(data_dir, info, tmp / "clock-offset" if test_clock else None, source=source)
        if listeners:
            lines = "".join(f"{name} = {json.dumps(value)}\n" for name, value in listeners.items())
            with open(data_dir / "kma.toml", "a", encoding="utf-8") as config:
                config.write(f"\n[listeners]\n{lines}")
        kma.start()
        return kma

    @property
    def passphrases(self) -> dict[str, str]:
        return {u["id"]: u["passphrase"] for u in self.demo.get("users", [])}

    def env(self) -> dict[str, str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **_source_env(self.source)}
        if self.clock_file is not None:
            env["KMA_TEST_CLOCK_FILE"] = str(self.clock_file)
        return env

    def start(self, port: int = 0, caught_up: bool = True) -> None:
        """`caught_up`: wait also until the KMA serves agents (a cluster KMA's replica has caught
        up with the cluster after its start; its ready file says so)."""
        ready = self.data_dir.parent / "ready.json"
        ready.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kma",
                "serve",
                "--data-dir",
                str(self.data_dir),
                "--management-port",
                str(port),
                "--service-port",
                str(self.service_port),
                "--ready-file",
                str(ready),
            ],
            env=self.env(),
            cwd=self.source,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        _LEFT_RUNNING[id(self)] = (os.getpid(), self)
        try:
            self.wait_ready(caught_up=caught_up)
        except BaseException:
            # A KMA that never came up is no fixture's to stop: it would run until the session ends.
            # The process stays readable (its exit status) for a test that expected the refusal.
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            raise

    @classmethod
    def awaiting_setup(cls, tmp: Path) -> RunningKma:
        """`kma serve` on an empty data directory: in set-up mode; `setup` holds the ready file's
        set-up code and temporary certificate fingerprint."""
        kma = cls(tmp / "kma", clock_file=tmp / "clock-offset")
        kma.start()
        return kma

    def wait_ready(self, set_up: bool = False, caught_up: bool = False) -> None:
        """Until the ready file is there; `set_up`: the one normal mode writes once set-up mode has
        handed over (set-up mode's own is removed then); `caught_up`: and says the KMA serves agents."""
        process = self.process
        assert process is not None
        ready = self.data_dir.parent / "ready.json"

        def arrived() -> dict[str, Any] | None:
            info = _ready_info(ready)
            if info is None or (set_up and info.get("mode") == "setup"):
                return None
            return None if caught_up and info.get("caught_up") is False else info

        wait_until(lambda: arrived() is not None or process.poll() is not None, READY_TIMEOUT, what="ready")
        if process.poll() is not None:
            said = process.stdout.read() if process.stdout else ""
            raise RuntimeError(f"kma serve exited: {said}")
        info = arrived()
        assert info is not None
        self.setup = info if info.get("mode") == "setup" else {}
        self.address = info["management_address"]
        trust = Trust.fetch(self.address)
        assert trust.fingerprint == info["ca_fingerprint"]
        self.ca_pem, self.fingerprint = trust.ca_pem, trust.fingerprint

    def restart(self) -> None:
        port = int(self.address.rsplit(":", 1)[1])
        self.stop()
        self.start(port)

    def client(
        self, user_id: str | None = None, passphrase: str | None = None, timeout: float = 15
    ) -> KmsClient:
        client = KmsClient(self.address, ca_pem=self.ca_pem, ca_fingerprint=self.fingerprint, timeout=timeout)
        self._clients.append(client)
        if user_id is not None:
            client.sign_in(user_id, passphrase or self.passphrases[user_id])
        return client

    def advance_clock(self, seconds: int) -> None:
        assert self.clock_file is not None, "start the KMA with test_clock=True"
        current = int(self.clock_file.read_text()) if self.clock_file.exists() else 0
        self.clock_file.write_text(str(current + seconds))

    def stop(self, sig: int = signal.SIGTERM) -> None:
        for client in self._clients:
            client.close()
        self._clients.clear()
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None
        _LEFT_RUNNING.pop(id(self), None)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def log_text(self) -> str:
        log = self.data_dir / "logs" / "kma.log"
        return log.read_text(errors="replace") if log.exists() else ""


# The KMAs started and not stopped, with the process that started them (a forked child inherits
# this table, and must not stop its parent's KMAs when it exits).
_LEFT_RUNNING: dict[int, tuple[int, RunningKma]] = {}


@atexit.register
def _stop_left_running() -> None:
    for owner, kma in list(_LEFT_RUNNING.values()):
        if owner == os.getpid():
            kma.stop()


@contextmanager
def read_only_db(kma: RunningKma | Path) -> Iterator[sqlite3.Connection]:
    path = kma.data_dir / "kma.db" if isinstance(kma, RunningKma) else kma
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        yield conn
    finally:
        conn.close()


def pool_keys(kma: RunningKma | Path) -> int:
    """Pool keys the KMA (or the store at this path) has generated, Ready or still waiting for a
    backup (the store's count: the API's counts stop at the lists' limit, and a one-KMA pool is
    Ready only once backed up)."""
    with read_only_db(kma) as db:
        pool = "activated_at IS NULL AND destroyed_at IS NULL AND key_group_id IS NULL"
        return int(db.execute(f"SELECT count(*) FROM keys WHERE {pool}").fetchone()[0])


def ready_pool(kma: RunningKma, size: int, timeout: float = 120) -> None:
    """A one-KMA cluster issues only keys a database backup holds (issue 12): grow the demo KMA's
    pool to `size`, wait until it is generated, and back it up, for tests that issue many keys."""
    admin = kma.client("admin")
    kma_id = admin.get_status().kma_id
    admin.update_kma(kma_id, key_pool_size=size)

    def filled() -> bool:
        counts = admin.get_dashboard().keys_by_state
        return counts.get("generated", 0) + counts.get("ready", 0) >= size

    wait_until(filled, timeout, interval=0.2, what="the key pool filling")
    admin.create_backup()
