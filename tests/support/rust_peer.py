"""A KMIP client in Rust that nobody here wrote (tests/peers/rust-kmip: NLnet Labs' kmip-protocol
for 1.0, Cosmian's cosmian_kmip types and TTLV for 1.4, 2.0 and 2.1), built with cargo from
crates.io at the versions its Cargo.lock pins, and run as an enrolled agent.

The build is cached in ~/.cache/kms-manager/rust-kmip (cargo's target folder): a second run only
checks that nothing changed (a third of a second). A cold build compiles about 240 crates, most
of them what cosmian_kmip's logger brings (OpenTelemetry): about 2.5 minutes of CPU on this
project's 2-core machines. Where cargo is missing the tests skip with the reason, except under
CI, where a skip would hide a peer that no longer builds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "peers" / "rust-kmip"
TARGET = Path.home() / ".cache" / "kms-manager" / "rust-kmip"
BINARY = TARGET / "debug" / "kms-peer-rust-kmip"


def cargo() -> str | None:
    """cargo on PATH, or where rustup puts it (a login shell's PATH is not always the test's)."""
    found = shutil.which("cargo") or Path.home() / ".cargo" / "bin" / "cargo"
    return str(found) if Path(found).is_file() else None


def built_peer() -> Path:
    found = cargo()
    if found is None:
        reason = "cargo is not installed (rustup.rs), so the Rust KMIP peer cannot be built"
        if os.environ.get("CI"):
            pytest.fail(f"CI must build the Rust KMIP peer, but cannot: {reason}")
        pytest.skip(reason)
    done = subprocess.run(
        [found, "build", "--locked", "--quiet", "--manifest-path", str(SOURCE / "Cargo.toml")],
        env={**os.environ, "CARGO_TARGET_DIR": str(TARGET)},
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, f"cargo build of {SOURCE} failed:\n{done.stderr[-6000:]}"
    return BINARY


def run_peer(binary: Path, version: str, address: str, agent_dir: Path, *command: str) -> dict[str, Any]:
    """One run of the peer: its JSON line of each step, by step name."""
    done = subprocess.run(
        [str(binary), version, address, str(agent_dir), *command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    steps = {}
    for line in done.stdout.splitlines():
        step = json.loads(line)
        steps[step.pop("step")] = step
    assert done.returncode in (0, 1), done.stderr
    return steps
