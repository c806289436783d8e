"""The demo KMA's credentials, so local mode can be explored in every role.

A demo is not a secret: ``kma demo`` keeps every passphrase it made (users, key split members,
agents' one-time enrollment passphrases) in ``demo-credentials.json`` (mode 0600) in the demo
KMA's data folder. Local mode also keeps a copy in the OS keyring where a secure one exists, so
the demo stays usable if the file is lost. Only demo KMAs have this file: ``kma init`` never
stores a credential, and the manager never writes one for a real KMA.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.session import secrets

log = logging.getLogger(__name__)

FILE_NAME = "demo-credentials.json"


@dataclass(frozen=True)
class DemoUser:
    id: str
    name: str
    roles: tuple[str, ...]
    passphrase: str


@dataclass(frozen=True)
class DemoCredentials:
    """What ``kma demo --json`` printed: users, the key split and the agents."""

    data: dict[str, Any]
    kept_in: str = ""  # where they were read from, to tell the user

    @property
    def users(self) -> list[DemoUser]:
        return [
            DemoUser(
                str(u["id"]), str(u.get("name", u["id"])), tuple(u.get("roles", ())), str(u["passphrase"])
            )
            for u in self.data.get("users", [])
        ]

    @property
    def members(self) -> list[tuple[str, str]]:
        """Key split members as (name, passphrase)."""
        split = self.data.get("key_split") or {}
        return [(str(m["name"]), str(m["passphrase"])) for m in split.get("members", [])]

    @property
    def threshold(self) -> int:
        return int((self.data.get("key_split") or {}).get("threshold", 0))

    @property
    def agents(self) -> list[tuple[str, str]]:
        """Agents as (agent ID, one-time enrollment passphrase)."""
        return [(str(a["id"]), str(a["enrollment_passphrase"])) for a in self.data.get("agents", [])]

    def passphrase_of(self, user_id: str) -> str | None:
        return next((u.passphrase for u in self.users if u.id == user_id), None)


def file_path(data_dir: Path) -> Path:
    return Path(data_dir) / FILE_NAME


def _account(data_dir: Path) -> str:
    return f"local-kma:{Path(data_dir).resolve()}:demo-credentials"


def load(data_dir: Path) -> DemoCredentials | None:
    """The demo's credentials: from the data folder's file, else from the keyring, else (a local
    KMA made by an older version) the admin passphrase alone if the keyring kept it."""
    path = file_path(data_dir)
    try:
        return DemoCredentials(json.loads(path.read_text(encoding="utf-8")), str(path))
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        log.warning("cannot read %s: %s", path, exc)
    kept = secrets.load(_account(data_dir))
    if kept:
        try:
            return DemoCredentials(json.loads(kept), "the OS keyring (the file beside the KMA is gone)")
        except ValueError:
            log.warning("the keyring's copy of the demo credentials is not JSON; ignored")
    admin = secrets.load(secrets.LOCAL_ADMIN_ACCOUNT)
    if admin:
        return DemoCredentials(
            {"users": [{"id": "admin", "name": "Ada Admin", "roles": [], "passphrase": admin}]}
        )
    return None


def keep_in_keyring(data_dir: Path, credentials: DemoCredentials) -> bool:
    """A second copy where a secure keyring exists; False (nothing written) where none does."""
    return secrets.store(_account(data_dir), json.dumps(credentials.data))
