"""Local mode: the bundled reference KMA as a child process on the user's machine.

The manager never imports ``kma``; it runs ``python -m kma`` like any other client would start a
server, so local mode exercises exactly the API a remote cluster serves. First use makes a demo
KMA (``kma demo --json``) in the user's data folder; every start runs ``kma serve`` and waits for
its ready file. The first start picks free ports and later starts keep them (agents enrolled
against the local KMA find it again), falling back to free ones only when they are taken. The
KMA's standard input is a pipe the manager holds: :meth:`LocalKma.stop` closes it (the KMA stops
cleanly, on Windows too, where there is no SIGTERM) and kills only if it does not exit in time;
if the manager dies, the OS closes the pipe and the KMA stops by itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

DEMO_ADMIN = "admin"
# The frozen kma.exe is a console program: started from the windowed manager it would open a
# console window of its own on Windows.
NO_CONSOLE: dict[str, Any] = (
    {"creationflags": getattr(subprocess, "CREATE_NO_WINDOW", 0)} if sys.platform == "win32" else {}
)
PORTS_FILE = "local-mode-ports.json"  # the manager's own note inside the local KMA's folder
LOCK_FILE = "kma.lock"  # held by a running `kma serve` (one process per data folder)


class LocalKmaError(RuntimeError):
    """The local KMA could not be created or did not start; the message says what to do."""


@dataclass(frozen=True)
class ReadyInfo:
    management_address: str
    service_address: str
    ca_fingerprint: str
    pid: int
    moved_from: tuple[int, ...] = ()  # remembered ports that were taken, so others were chosen


def kma_command(*args: str) -> list[str]:
    """``python -m kma ...`` with this interpreter (works from a venv and a source tree).

    Frozen by PyInstaller there is no interpreter to pass ``-m`` to: the bundle ships a ``kma``
    executable next to ``kms-manager`` (installers/kms-manager.spec), and that is what runs.
    """
    if getattr(sys, "frozen", False):
        exe = Path(sys.executable).with_name("kma.exe" if sys.platform == "win32" else "kma")
        return [str(exe), *args]
    return [sys.executable, "-m", "kma", *args]


class LocalKma:
    """Creates (once), starts and stops a KMA under ``data_dir``."""

    def __init__(self, data_dir: Path, log_path: Path | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.log_path = log_path or self.data_dir.parent / "local-kma.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.demo_process: subprocess.Popen[bytes] | None = None  # `kma demo` while it runs
        self.ready: ReadyInfo | None = None

    @property
    def exists(self) -> bool:
        return self.data_dir.is_dir() and any(self.data_dir.iterdir())

    def create_demo(self, timeout: float = 180) -> dict[str, Any]:
        """Run ``kma demo --json``; returns its JSON. Stopped half-way (the user quit while it
        ran), the half-made folder is removed so the next start makes the demo again."""
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.demo_process = subprocess.Popen(
            kma_command("demo", "--data-dir", str(self.data_dir), "--json"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=_project_root(),
            **NO_CONSOLE,
        )
        try:
            stdout, stderr = self.demo_process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            self.demo_process.kill()
            self.demo_process.communicate()
            shutil.rmtree(self.data_dir, ignore_errors=True)
            raise LocalKmaError(
                f"Creating the demo KMA took longer than {timeout:.0f} s. Try again."
            ) from exc
        finally:
            returncode, self.demo_process = self.demo_process.returncode, None
        if returncode != 0:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            tail = stderr.decode(errors="replace").strip().splitlines()[-5:]
            raise LocalKmaError(
                "Creating the demo KMA failed:\n" + "\n".join(tail) + "\n\nStart again to make a new one."
            )
        out = stdout.decode().strip()
        try:
            made: dict[str, Any] = json.loads(
                out.splitlines()[-1] if "\n" in out and not out.startswith("{") else out
            )
            return made
        except (json.JSONDecodeError, IndexError) as exc:
            raise LocalKmaError(f"kma demo printed no JSON: {out[:200]!r}") from exc

    def start(self, timeout: float = 60, wait_for_previous: float = 15) -> ReadyInfo:
        """Start ``kma serve`` on the remembered ports (free ones the first time) and wait for its
        ready file. A previous local KMA on this folder that is still stopping is waited for."""
        make_private(self.data_dir)
        self._wait_until_free(wait_for_previous)
        ports, moved = self._ports()
        ready_file = self.data_dir / "local-mode-ready.json"
        ready_file.unlink(missing_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it for its lifetime
        self.process = subprocess.Popen(
            kma_command(
                "serve",
                "--data-dir",
                str(self.data_dir),
                "--management-port",
                str(ports[0]),
                "--service-port",
                str(ports[1]),
                "--ready-file",
                str(ready_file),
                "--stop-on-stdin-close",
                "--record-addresses",  # kma.toml and demo-credentials.json then name these ports
            ),
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=_project_root(),
            **NO_CONSOLE,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LocalKmaError(
                    f"The local KMA stopped at once: {self._last_log_line(log_start)}\n\n"
                    f"The whole log is in {self.log_path}."
                )
            if ready_file.exists():
                try:
                    data = json.loads(ready_file.read_text())
                except json.JSONDecodeError:
                    time.sleep(0.05)  # the file is being written
                    continue
                self.ready = ReadyInfo(
                    management_address=data["management_address"],
                    service_address=data.get("service_address", ""),
                    ca_fingerprint=data["ca_fingerprint"],
                    pid=int(data.get("pid", self.process.pid)),
                    moved_from=moved,
                )
                self._remember_ports(self.ready)
                return self.ready
            time.sleep(0.05)
        self.stop()
        raise LocalKmaError(
            f"The local KMA did not become ready within {timeout:.0f} s. See {self.log_path}."
        )

    # -- ports --------------------------------------------------------------------------------
    def _ports(self) -> tuple[tuple[int, int], tuple[int, ...]]:
        """(management, service) ports to ask for, and the remembered ones that are taken."""
        try:
            saved = json.loads((self.data_dir / PORTS_FILE).read_text())
            wanted = (int(saved["management_port"]), int(saved["service_port"]))
        except (OSError, ValueError, KeyError, TypeError):
            return (0, 0), ()
        taken = tuple(port for port in wanted if not _port_free(port))
        management, service = (0 if port in taken else port for port in wanted)
        return (management, service), taken

    def _remember_ports(self, ready: ReadyInfo) -> None:
        ports = {
            "management_port": _port_of(ready.management_address),
            "service_port": _port_of(ready.service_address),
        }
        with contextlib.suppress(OSError):
            # Private like every file in a KMA's folder: `kma serve` refuses a folder others can read.
            fd = os.open(self.data_dir / PORTS_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "w") as note:
                note.write(json.dumps(ports) + "\n")

    # -- a previous local KMA -----------------------------------------------------------------
    def serving_elsewhere(self) -> bool:
        """Whether some ``kma serve`` (a previous local mode still stopping, or another manager)
        holds this folder's lock now."""
        lock_path = self.data_dir / LOCK_FILE
        if not lock_path.exists():
            return False
        try:  # the same lock `kma serve` holds (filelock: flock here, LockFileEx on Windows)
            with FileLock(lock_path, timeout=0):
                return False
        except Timeout:
            return True

    def _wait_until_free(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.serving_elsewhere():
            if time.monotonic() >= deadline:
                raise LocalKmaError(
                    f"Another KMA is still running on {self.data_dir} (another KMS Manager in "
                    f"local mode, or a `kma serve` started by hand). Quit it, or wait until it "
                    f"has stopped, then start again."
                )
            time.sleep(0.1)

    def _last_log_line(self, since: int) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(since)
                lines = [ln.strip() for ln in log.read().decode(errors="replace").splitlines()]
        except OSError:
            return "no reason was logged."
        lines = [ln for ln in lines if ln]
        return lines[-1] if lines else "no reason was logged."

    def stop_making_demo(self) -> None:
        making = self.demo_process
        if making is not None and making.poll() is None:
            making.terminate()  # create_demo() then removes the half-made folder

    def stop(self, timeout: float = 10, kill: bool = True) -> None:
        """SIGTERM, then wait ``timeout`` s; after that kill it, or with ``kill=False`` (quitting)
        let it finish stopping by itself (its shutdown is bounded; the next start waits for it)."""
        self.stop_making_demo()
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        if proc.stdin is not None:
            proc.stdin.close()  # the KMA's signal to stop cleanly (kma serve --stop-on-stdin-close)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            if kill:
                proc.kill()
                proc.wait(5)


def _port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1]) if ":" in address else 0


def _port_free(port: int) -> bool:
    """Whether ``kma serve`` could listen on 127.0.0.1:``port`` now (same options as it uses)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def make_private(data_dir: Path) -> None:
    """Make the local KMA's folder this account's only, as `kma serve` demands.

    The manager made this folder itself (`kma demo`); one made before the KMA set its files
    private from creation still has the default modes (0755, 0644), and `kma serve` would refuse
    it. It is the user's own KMA, so the manager tightens it rather than stop working.
    """
    if not data_dir.is_dir():
        return
    for folder, _, files in os.walk(data_dir):
        os.chmod(folder, 0o700)
        for name in files:
            path = Path(folder, name)
            if not path.is_symlink():
                os.chmod(path, path.stat().st_mode & 0o700)


def _project_root() -> str | None:
    """Run from the source tree when not installed, so ``-m kma`` resolves."""
    if getattr(sys, "frozen", False):
        return None  # the bundle's kma needs no source tree; keep relative --data-dir working
    root = Path(__file__).resolve().parent.parent
    return str(root) if (root / "kma").is_dir() else None


def has_display() -> bool:
    """False on a Linux box with no X11/Wayland display and no explicit Qt platform."""
    if not sys.platform.startswith("linux"):
        return True
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
