"""`kma serve` runs its KMA's rqlite node: start it, wait until it serves, stop it with the KMA.

The node keeps its data under the data dir (cluster/rqlite/), listens for its KMA on loopback
only, and talks Raft to the other nodes over mutual TLS. Its Raft port lets in only the node
certificates of the cluster's current KMAs (`cluster/nodes.pem`, kma/cluster/trust.py), its HTTP
API only this node's own certificate, and both ask every command for the node credential
(`-auth`). Foreign keys are on, as in the embedded store.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kma.cluster.node_config import NODE_USER, ClusterFiles, NodeConfig
from kma.errors import KmaError
from kma.store.rqlite_http import RESTARTS, RqliteClient, tls_context

log = logging.getLogger(__name__)
VERSION = "v8.43.4"
BINARY_ENV = "KMA_RQLITED"
START_TIMEOUT_S = 60.0
KEEP_PRIVATE_S = 0.2  # how often the files of a running rqlited are closed again
PREVIOUS_NODE_TIMEOUT_S = 30.0  # a killed KMA's rqlited has this long to end by itself


class NodeFailed(KmaError):
    """The local rqlite node did not start or stopped serving."""


def rqlited_binary() -> Path:
    """The rqlited to run: $KMA_RQLITED, else the one beside a frozen kma (the .deb ships it in
    /usr/lib/kma), else the one scripts/build-rqlite.sh cached, else PATH."""
    if os.environ.get(BINARY_ENV):
        return Path(os.environ[BINARY_ENV])
    beside = Path(sys.executable).with_name("rqlited")
    if getattr(sys, "frozen", False) and beside.exists():
        return beside
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    built = (
        Path(os.environ.get("KMA_RQLITE_CACHE") or cache / "kms-manager" / f"rqlite-{VERSION}") / "rqlited"
    )
    if built.exists():
        return built
    found = shutil.which("rqlited")
    if found:
        return Path(found)
    raise NodeFailed(
        f"rqlited {VERSION} is not installed: run scripts/build-rqlite.sh (or set {BINARY_ENV})."
    )


def _death_signal() -> Callable[[], None] | None:
    """On Linux, what makes rqlited end when its KMA ends, even by SIGKILL (a node left running
    without its KMA would keep voting for a KMA that serves nobody). Loaded before the fork: the
    child only calls prctl(PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
    return lambda: prctl(1, signal.SIGTERM)


def _is_node_of(pid: int, rqlite_dir: Path) -> bool:
    """Whether `pid` is a live rqlited serving `rqlite_dir` (not a reused pid, nor a zombie, whose
    command line is empty). Only Linux shows it, and only Linux gives rqlited a death signal."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return str(rqlite_dir).encode() in command and any(part.endswith(b"rqlited") for part in command)


def _owner_only(top: Path) -> None:
    # Five times a second while rqlited runs: a folder already 0700 is not changed again (a write
    # of its inode each time otherwise, for nothing).
    for folder, _, names in os.walk(top):
        if stat.S_IMODE(os.lstat(folder).st_mode) != 0o700:
            os.chmod(folder, 0o700)
        for name in names:
            path = Path(folder, name)
            try:
                mode = path.lstat().st_mode
                if mode & 0o077 and not stat.S_ISLNK(mode):
                    path.chmod(mode & 0o700)
            except FileNotFoundError:
                pass  # a scratch file rqlited removed meanwhile


def close_left_open(data_dir: Path) -> None:
    """Before a start's check that the data dir is private (kma/datadir.py): a KMA killed outright
    may leave files rqlited opened to all (it makes its SQLite file 0644 whenever it installs one:
    a snapshot from the leader, a restart, a boot) in the window before `keep_private` closed them.
    They were never reachable by others while the node's folder was its owner's only: that folder
    is checked as it is; what is inside it is closed again."""
    folder = ClusterFiles.of(data_dir).rqlite_dir
    if folder.is_dir() and not folder.lstat().st_mode & 0o077:
        _owner_only(folder)


class RqliteNode:
    """One rqlited process for one data dir."""

    def __init__(self, files: ClusterFiles, config: NodeConfig | None = None) -> None:
        self.files = files
        self.config = config or files.load()
        self.process: subprocess.Popen[bytes] | None = None
        self._log_start = 0  # where this start's lines begin in rqlited.log

    def client(self) -> RqliteClient:
        """This KMA's client of its rqlited: it presents the node certificate and credential, and
        trusts that one certificate (the node's own) as the server's."""
        files = self.files
        return RqliteClient(
            self.config.http_address,
            tls_context(files.node_cert, files.node_cert, files.node_key),
            files.credential(),
        )

    def command(self, join: bool = True) -> list[str]:
        f, c = self.files, self.config
        # A node of a cluster made before node pins trusts the cluster CA until it has them.
        trusted = f.trusted_nodes if f.trusted_nodes.exists() else f.ca_cert
        tls = [
            "-node-cert",
            str(f.node_cert),
            "-node-key",
            str(f.node_key),
            "-node-ca-cert",
            str(trusted),
            "-node-verify-client",
            "-http-cert",
            str(f.node_cert),
            "-http-key",
            str(f.node_key),
            "-http-ca-cert",
            str(f.node_cert),
            "-http-verify-client",
        ]
        args = [
            str(rqlited_binary()),
            "-node-id",
            c.node_id,
            "-http-addr",
            c.http_address,
            "-raft-addr",
            c.raft_address,
            "-fk",
            "-raft-shutdown-stepdown",
            *tls,
        ]
        if f.credential_file.exists():  # the file names the one user; its password never is an argument
            args += ["-auth", str(f.credential_file), "-join-as", NODE_USER]
        if not c.voter:
            args.append("-raft-non-voter=true")
        # Only a new node joins: one that has Raft state already is a member, and a restart must
        # not wait for the members it first joined through (they may be the ones that are down).
        if join and c.join and self.is_new():
            args += ["-join", ",".join(c.join), "-join-attempts", "20", "-join-interval", "1s"]
        return [*args, str(f.rqlite_dir)]

    def is_new(self) -> bool:
        return not (self.files.rqlite_dir / "raft.db").exists()

    @property
    def _pid_file(self) -> Path:
        return self.files.folder / "rqlited.pid"

    def _outlive_previous(self, timeout: float = PREVIOUS_NODE_TIMEOUT_S) -> None:
        """A KMA killed outright leaves its rqlited shutting down (the death signal is a SIGTERM,
        and a leader steps down first): the new node must not start until the old one has let go
        of its ports and files ("address already in use" on the Raft port otherwise)."""
        try:
            pid = int(self._pid_file.read_text())
        except (OSError, ValueError):
            return
        deadline = time.monotonic() + timeout
        while _is_node_of(pid, self.files.rqlite_dir):
            if time.monotonic() > deadline:
                log.warning("the previous rqlited (pid %d) did not end in %.0f s; killing it", pid, timeout)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                deadline = float("inf")  # a killed process ends: wait for it
            time.sleep(0.1)

    def start(self, join: bool = True, timeout: float = START_TIMEOUT_S) -> None:
        self.files.rqlite_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._outlive_previous()
        log_path = self.files.folder / "rqlited.log"
        with log_path.open("ab") as out:
            self._log_start = out.tell()
            # The child runs only prctl before exec, loaded before the fork (_death_signal).
            self.process = subprocess.Popen(
                self.command(join),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                # Its files private from the start, not only once `keep_private` runs at a clean
                # stop: a KMA killed outright must start again (kma/datadir.py checks at start).
                umask=0o077,
                preexec_fn=_death_signal(),  # noqa: PLW1509
            )
        self._pid_file.write_text(str(self.process.pid))
        try:
            self.wait_ready(timeout)
        finally:
            RESTARTS.end(self.config.http_address)  # requests waiting for it go on (or fail)
        self.keep_private()
        threading.Thread(target=self._keep_private_while_running, name="rqlited-files", daemon=True).start()

    def keep_private(self) -> None:
        """rqlited makes some of its files (its SQLite file among them) readable by all; the data
        dir stays its owner's only (kma/datadir.py checks it at every start)."""
        _owner_only(self.files.rqlite_dir)

    def _keep_private_while_running(self) -> None:
        """rqlited opens its SQLite file to all again whenever it installs one (a snapshot from the
        leader): close it again at once, so that a KMA killed at any moment starts again."""
        process = self.process
        while process is not None and process.poll() is None:
            try:
                self.keep_private()
            except OSError:
                log.exception("could not keep rqlited's files private")
            time.sleep(KEEP_PRIVATE_S)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        client = self.client()
        try:
            while time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    raise NodeFailed(
                        f"rqlited exited with status {self.process.returncode} ({self._last_words()}); "
                        f"see {self.files.folder / 'rqlited.log'}"
                    )
                # With a leader: a restarted node's file is only its last snapshot until the leader
                # tells it what has been committed since (it could hold a key destroyed since).
                if client.ready():
                    return
                time.sleep(0.1)
        finally:
            client.close()
        self.stop()
        raise NodeFailed(
            f"rqlited did not become ready within {timeout:.0f} s; see {self.files.folder / 'rqlited.log'}"
        )

    def _last_words(self) -> str:
        """The last line rqlited wrote since this start: why it exited (a port taken, a join that
        failed), so the installer need not open its log first."""
        try:
            with (self.files.folder / "rqlited.log").open("rb") as written:
                written.seek(self._log_start)
                lines = written.read()[-4096:].decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return "its log cannot be read"
        return lines[-1].strip() if lines else "it wrote nothing"

    def stop(self, timeout: float = 15.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        RESTARTS.begin(self.config.http_address)  # this KMA's requests wait for it, bounded
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("rqlited did not stop within %.0f s; killing it", timeout)
            process.kill()
            process.wait()
        self._pid_file.unlink(missing_ok=True)
        self.keep_private()
