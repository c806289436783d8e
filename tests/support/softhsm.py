"""A SoftHSM2 token of its own for a test (docs/hsm.md): its token folder and config in a temp dir.

SoftHSM2 finds its config through SOFTHSM2_CONF, which every `kma` process the test starts
inherits from this process's environment (set it with monkeypatch.setenv).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

MODULES = (
    "/usr/lib/softhsm/libsofthsm2.so",
    "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
    "/usr/local/lib/softhsm/libsofthsm2.so",
)
PIN, SO_PIN = "1234-5678", "87654321"


@dataclass(frozen=True)
class SoftHsm:
    conf: Path
    module: str
    label: str
    pin_file: Path

    def table(self, **changes: str) -> str:
        """The `[hsm]` table of answers or of kma.toml for this token."""
        values = {"module": self.module, "token_label": self.label, "pin_file": str(self.pin_file), **changes}
        return "\n[hsm]\n" + "".join(f'{k} = "{v}"\n' for k, v in values.items() if v)

    def add_token(self, label: str) -> None:
        """Another token in the same SoftHSM2 (a replacement HSM, a joining KMA's)."""
        env = {**os.environ, "SOFTHSM2_CONF": str(self.conf)}
        subprocess.run(
            ["softhsm2-util", "--init-token", "--free", "--label", label, "--pin", PIN, "--so-pin", SO_PIN],
            env=env,
            check=True,
            capture_output=True,
        )


def softhsm(tmp: Path, label: str = "kma-token") -> SoftHsm:
    """A new SoftHSM2 in `tmp` with one initialised token, and a PIN file only this user can read."""
    module = next((m for m in MODULES if Path(m).exists()), None)
    assert module is not None, "SoftHSM2 is not installed: run scripts/setup.sh (apt-get install softhsm2)"
    tokens = tmp / "softhsm-tokens"
    tokens.mkdir(parents=True)
    conf = tmp / "softhsm2.conf"
    conf.write_text(f"directories.tokendir = {tokens}\nobjectstore.backend = file\nlog.level = ERROR\n")
    pin_file = tmp / "hsm.pin"
    pin_file.write_text(PIN + "\n")
    pin_file.chmod(0o600)
    hsm = SoftHsm(conf, module, label, pin_file)
    hsm.add_token(label)
    return hsm
