"""Where a KMA keeps its files, and this KMA's identity (kma.toml).

DIR/kma.db            the store (SQLite, WAL)
DIR/kma.toml          this KMA: its ID, site, listen addresses, settings
DIR/tls/ca.pem        the cluster CA certificate (public)
DIR/tls/server.pem    this KMA's certificate, signed by the cluster CA
DIR/tls/server.key    its private key (0600; a locked KMA must still serve TLS to be unlocked)
DIR/unlock.key        with autonomous unlock only: the local key that unwraps the master key (0600)
DIR/logs/kma.log      the log (never any key material or passphrase)

Everything in DIR is its owner's only (folders 0700, files 0600): the database holds the sealed
key split shares and the users' passphrase hashes, enough to attack them offline. Every `kma`
command sets the umask at start (`keep_private`), so no file is ever created open to others,
SQLite's -wal and -shm files included, and `kma serve` and `kma status` refuse a data directory
that others can read (`DataDir.check_private`).
DIR/demo-credentials.json  `kma demo` only: every demo passphrase (0600). A demo is not a secret;
                      a KMA made with `kma init` never stores a credential.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kma.certificate_settings import CertificateSettings
from kma.crypto.hsm_settings import HsmSettings
from kma.errors import UnsafePermissions, ValidationFailed
from kma.limits import ListenerLimits

PRIVATE_UMASK = 0o077  # new files and folders: no access for group or others


def keep_private() -> None:
    """From now on, every file and folder this process creates is its owner's only."""
    os.umask(PRIVATE_UMASK)


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
    def node_renewal_asked(self) -> Path:
        """Present once a Security Officer asked this KMA to renew its certificates: a cluster node
        then renews its node certificate too (kma/cluster/node_renewal.py), and removes this."""
        return self.root / "renew-node-certificate"

    @property
    def rows_sealed(self) -> Path:
        """Present once this KMA has unlocked on a version with row MACs (kma/services/integrity/row_macs.py),
        listing the tables it sealed: from then on a row of theirs without a MAC is tampered with,
        not merely older."""
        return self.root / "rows-sealed"

    @property
    def keys_sealed(self) -> Path:
        """Present once this KMA has sealed the key rows from before key MACs
        (kma/services/integrity/key_macs.py):
        from then on a key without a MAC is tampered with, not merely older."""
        return self.root / "keys-sealed"

    @property
    def log_file(self) -> Path:
        return self.root / "logs" / "kma.log"

    def create(self) -> None:
        """Make the data directory, private even if it already existed (empty) with looser modes."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.root, 0o700)

    def exposed(self) -> list[tuple[Path, int]]:
        """Every file and folder in the data directory that other accounts can use, with its mode.

        Windows has no POSIX modes (Python makes st_mode up from the read-only flag, so everything
        would look open): access there is by ACL, not checked here; the manager's local KMA lives in
        the account's own %APPDATA%, which is private to it by default.
        """
        if sys.platform == "win32":
            return []
        found = []
        for folder, _, files in os.walk(self.root):  # each folder once, then its files
            for path in [Path(folder), *(Path(folder, name) for name in files)]:
                mode = path.lstat().st_mode
                if mode & 0o077 and not stat.S_ISLNK(mode):
                    found.append((path, stat.S_IMODE(mode)))
        return found

    def check_private(self) -> None:
        """Refuse to run on a data directory that other local accounts can read."""
        exposed = self.exposed()
        if not exposed:
            return
        shown = ", ".join(
            f"{p.relative_to(self.root) if p != self.root else p} ({m:04o})" for p, m in exposed[:5]
        )
        more = f" and {len(exposed) - 5} more" if len(exposed) > 5 else ""
        raise UnsafePermissions(
            f"{self.root} is open to other accounts on this machine: {shown}{more}. It holds the sealed "
            "key split shares and the passphrase hashes, which a copy lets anyone attack offline. "
            f"Make it this account's only, then start again: chmod -R go-rwx {shlex.quote(str(self.root))}"
        )

    @property
    def demo_credentials(self) -> Path:
        return self.root / "demo-credentials.json"

    def is_empty(self) -> bool:
        """Nothing in it but what a `kma serve` waiting in set-up mode keeps there (its lock, its log)."""
        if not self.root.exists():
            return True
        return self.root.is_dir() and all(p.name in ("kma.lock", "logs") for p in self.root.iterdir())

    def staging(self, purpose: str) -> Path:
        """A new folder to build this data directory in, moved into place only once complete (so a
        refusal halfway leaves nothing): beside it where its parent may be written, else inside it
        (a packaged KMA's /var/lib/kma, whose parent only root writes; `take_from` moves it up)."""
        self.root.parent.mkdir(parents=True, exist_ok=True)
        try:
            return Path(tempfile.mkdtemp(prefix=f".{self.root.name}.{purpose}-", dir=self.root.parent))
        except PermissionError:
            if not self.root.is_dir():
                raise
            return Path(tempfile.mkdtemp(prefix=f".{purpose}-", dir=self.root))

    def take_from(self, staging: Path) -> None:
        """A checked, staged KMA becomes this data directory (renamed whole, or moved into it)."""
        if not self.root.exists():
            staging.rename(self.root)
            return
        for entry in staging.iterdir():
            entry.rename(self.root / entry.name)
        staging.rmdir()
        os.chmod(self.root, 0o700)

    def is_initialised(self) -> bool:
        # A cluster node's store is its rqlite node (cluster/node.toml), not kma.db.
        cluster_node = (self.root / "cluster" / "node.toml").exists()
        return self.identity_file.exists() and (self.db.exists() or cluster_node)

    def _config(self) -> dict[str, Any]:
        return tomllib.loads(self.identity_file.read_text(encoding="utf-8"))

    def identity(self) -> Identity:
        data = self._config()
        return Identity(**{k: str(data[k]) for k in Identity.__dataclass_fields__})

    def record_addresses(self, management: str, service: str) -> None:
        """Write where this KMA listens now into kma.toml (and a demo's credentials file), so tools
        that find it by its data directory (`kma quorum list --data-dir`) reach it."""
        text = self.identity_file.read_text(encoding="utf-8")
        for key, value in (("management_address", management), ("service_address", service)):
            text = re.sub(rf'^{key} = ".*"$', f'{key} = "{value}"', text, count=1, flags=re.M)
        self.identity_file.write_text(text, encoding="utf-8")
        if self.demo_credentials.exists():
            demo = json.loads(self.demo_credentials.read_text(encoding="utf-8"))
            demo["management_address"] = management
            write_private(self.demo_credentials, json.dumps(demo, indent=2).encode())

    def settings(self, table: str) -> dict[str, Any]:
        """One table of kma.toml, e.g. `[metrics]`; empty when absent."""
        found = self._config().get(table, {})
        return found if isinstance(found, dict) else {}

    def hsm(self) -> HsmSettings | None:
        """The `[hsm]` table: this KMA's master key is in a PKCS#11 token; None for software."""
        table = self._config().get("hsm")
        if table is None:
            return None
        if not isinstance(table, dict):
            raise ValidationFailed(f"[hsm] in {self.identity_file} must be a table.")
        try:
            return HsmSettings.from_table(table, "")
        except ValueError as exc:
            raise ValidationFailed(f"{self.identity_file}: {exc}") from None

    def listener_limits(self) -> ListenerLimits:
        return ListenerLimits.from_table(self._config().get("listeners", {}))

    def certificate_settings(self) -> CertificateSettings:
        """The `[certificates]` table: validities, warnings, renewal (kma/certificate_settings.py)."""
        if not self.identity_file.exists():
            return CertificateSettings()  # set-up mode: the defaults
        return CertificateSettings.from_table(self.settings("certificates"))
