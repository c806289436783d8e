"""Saved connection profiles: where a KMA is, which CA we pinned for it, who signs in.

Stored in ``QSettings`` because none of it is secret: the address, the pinned CA fingerprint,
the user ID and the cluster's KMAs (each one's management address, learnt while signed in, so the
manager can go on with another KMA when its own stops answering). Passphrases are never stored;
a remembered session token lives only in the OS keyring
(:mod:`app.session.secrets`).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

from PySide6.QtCore import QSettings

from kms_client import KnownKma

_GROUP = "profiles"
_NAME_OK = re.compile(r"[^A-Za-z0-9 ._@:-]")


@dataclass
class ConnectionProfile:
    """One KMA connection the user saved."""

    name: str
    address: str
    user_id: str = ""
    ca_fingerprint: str = ""  # empty until the user accepts the CA on first connect
    ca_pem: str = ""  # the accepted CA certificate (public), so later connects verify from it
    remember: bool = False
    kmas: list[KnownKma] = field(default_factory=list)  # the cluster's KMAs, as last learnt

    @property
    def key(self) -> str:
        """QSettings-safe key for this profile."""
        return _NAME_OK.sub("_", self.name) or "default"


class ProfileStore:
    """Reads and writes profiles in QSettings; the last used one comes first."""

    def __init__(self, settings: QSettings | None = None) -> None:
        self._settings = settings or QSettings()

    def all(self) -> list[ConnectionProfile]:
        s = self._settings
        s.beginGroup(_GROUP)
        try:
            names = s.childGroups()
            profiles = []
            for key in names:
                s.beginGroup(key)
                profiles.append(
                    ConnectionProfile(
                        name=str(s.value("name", key)),
                        address=str(s.value("address", "")),
                        user_id=str(s.value("user_id", "")),
                        ca_fingerprint=str(s.value("ca_fingerprint", "")),
                        ca_pem=str(s.value("ca_pem", "")),
                        remember=str(s.value("remember", "false")).lower() == "true",
                        kmas=_kmas(str(s.value("kmas", "") or "")),
                    )
                )
                s.endGroup()
        finally:
            s.endGroup()
        last = self.last_used()
        profiles.sort(key=lambda p: (p.name != last, p.name.lower()))
        return profiles

    def get(self, name: str) -> ConnectionProfile | None:
        return next((p for p in self.all() if p.name == name), None)

    def save(self, profile: ConnectionProfile) -> None:
        s = self._settings
        s.beginGroup(f"{_GROUP}/{profile.key}")
        values = {**asdict(profile), "kmas": json.dumps([k.to_json() for k in profile.kmas])}
        for name, value in values.items():
            s.setValue(name, "true" if value is True else "false" if value is False else value)
        s.endGroup()
        s.sync()

    def delete(self, name: str) -> None:
        profile = self.get(name)
        if profile is not None:
            self._settings.remove(f"{_GROUP}/{profile.key}")
            self._settings.sync()

    def last_used(self) -> str:
        return str(self._settings.value("last_profile", ""))

    def set_last_used(self, name: str) -> None:
        self._settings.setValue("last_profile", name)


def _kmas(text: str) -> list[KnownKma]:
    """The saved KMA list; one that cannot be read is learnt again at the next sign-in."""
    try:
        return [KnownKma.from_json(d) for d in json.loads(text)] if text else []
    except (ValueError, TypeError, KeyError):
        return []
