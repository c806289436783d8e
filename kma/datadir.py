"""Where a KMA keeps its files, and this KMA's identity (kma.toml).

DIR/kma.db            the store (SQLite, WAL)
DIR/kma.toml          this KMA: its ID, site, listen addresses, settings
DIR/tls/ca.pem        the cluster CA certificate (public)
DIR/tls/server.pem    this KMA's certificate, signed by the cluster CA
DIR/tls/server.key    its private key (0600; a locked KMA must still serve TLS to be unlocked)
DIR/unlock.key        with autonomous unlock only: the local key that unwraps the master key (0600)
DIR/logs/kma.log      the log (never any key material or passphrase)
DIR/demo-credentials.json  `kma demo` only: every demo passphrase (0600). A demo is not a secret;
                      a KMA made with `kma init` never stores a credential.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def write_private(path: Path, data: bytes) -> None:
    """Write a secret file readable by its owner only, durably."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(path, 0o600)


@dataclass(frozen=True)
class Identity:
    kma_id: str
    site_id: str
    management_address: str
    service_address: str

    def to_toml(self) -> str:
        return "".join(f'{k} = "{v}"\n' for k, v in self.__dict__.items())


@dataclass(frozen=True)
class DataDir:
    root: Path

    @property
    def db(self) -> Path:
        return self.root / "kma.db"

    @property
    def identity_file(self) -> Path:
        return self.root / "kma.toml"

    @property
    def ca_cert(self) -> Path:
        return self.root / "tls" / "ca.pem"

    @property
    def server_cert(self) -> Path:
        return self.root / "tls" / "server.pem"

    @property
    def server_key(self) -> Path:
        return self.root / "tls" / "server.key"

    @property
    def unlock_key(self) -> Path:
        return self.root / "unlock.key"

    @property
    def log_file(self) -> Path:
        return self.root / "logs" / "kma.log"

    @property
    def demo_credentials(self) -> Path:
        return self.root / "demo-credentials.json"

    def is_initialised(self) -> bool:
        return self.identity_file.exists() and self.db.exists()

    def identity(self) -> Identity:
        data: dict[str, Any] = tomllib.loads(self.identity_file.read_text(encoding="utf-8"))
        return Identity(**{k: str(data[k]) for k in Identity.__dataclass_fields__})
