"""Local mode: the bundled reference KMA as a child process on the user's machine.

The manager never imports ``kma``; it runs ``python -m kma`` like any other client would start a
server, so local mode exercises exactly the API a remote cluster serves. First use makes a demo
KMA (``kma demo --json``) in the user's data folder; every start runs ``kma serve`` on a free port
and waits for its ready file. The KMA's standard input is a pipe the manager holds: :meth:`LocalKma.stop`
closes it (the KMA stops cleanly, on Windows too, where there is no SIGTERM) and kills only if it
does not exit in time; if the manager dies, the OS closes the pipe and the KMA stops by itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEMO_ADMIN = "admin"
# The frozen kma.exe is a console program: started from the windowed manager it would open a
# console window of its own on Windows.
NO_CONSOLE: dict[str, Any] = {"creationflags": subprocess.CREATE_NO_WINDOW} if sys.platform == "win32" else {}


class LocalKmaError(RuntimeError):
    """The local KMA could not be created or did not start; the message says what to do."""


@dataclass(frozen=True)
class ReadyInfo:
    management_address: str
    service_address: str
    ca_fingerprint: str
    pid: int


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
        self.ready: ReadyInfo | None = None

    @property
    def exists(self) -> bool:
        return self.data_dir.is_dir() and any(self.data_dir.iterdir())

    def create_demo(self, timeout: float = 180) -> dict[str, Any]:
        """Run ``kma demo --json``; returns its JSON (holds the demo passphrases: keep in memory)."""
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                kma_command("demo", "--data-dir", str(self.data_dir), "--json"),
                capture_output=True,
                timeout=timeout,
                check=False,
                cwd=_project_root(),
                **NO_CONSOLE,
            )
        except subprocess.TimeoutExpired as exc:
            raise LocalKmaError(
                f"Creating the demo KMA took longer than {timeout:.0f} s. Try again."
            ) from exc
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
            raise LocalKmaError(
                "Creating the demo KMA failed:\n" + "\n".join(tail)
                + f"\n\nRemove {self.data_dir} and try again."
            )
        out = done.stdout.decode().strip()
        try:
            return json.loads(out.splitlines()[-1] if "\n" in out and not out.startswith("{")
                              else out)
        except (json.JSONDecodeError, IndexError) as exc:
            raise LocalKmaError(f"kma demo printed no JSON: {out[:200]!r}") from exc

    def start(self, timeout: float = 60) -> ReadyInfo:
        """Start ``kma serve`` on free ports and wait for its ready file."""
        make_private(self.data_dir)
        ready_file = Path(tempfile.mkdtemp(prefix="kms-manager-")) / "ready.json"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it for its lifetime
        self.process = subprocess.Popen(
            kma_command(
                "serve",
                "--data-dir", str(self.data_dir),
                "--management-port", "0",
                "--service-port", "0",
                "--ready-file", str(ready_file),
                "--stop-on-stdin-close",
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
                    f"The local KMA exited with code {self.process.returncode}. "
                    f"See {self.log_path} for why."
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
                )
                return self.ready
            time.sleep(0.05)
        self.stop()
        raise LocalKmaError(
            f"The local KMA did not become ready within {timeout:.0f} s. See {self.log_path}."
        )

    def stop(self, timeout: float = 10) -> None:
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        if proc.stdin is not None:
            proc.stdin.close()  # the KMA's signal to stop cleanly (kma serve --stop-on-stdin-close)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


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
