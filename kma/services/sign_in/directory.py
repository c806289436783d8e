"""Directory sign-in: people sign in with their LDAP or Active Directory account (docs/directory.md).

A Security Officer sets where the directory is and which of its groups grant which roles, under
quorum (`SET_DIRECTORY`: it grants power); an Auditor reads it. A user ID that is a local user signs
in as one (so the key split members' and a break-glass Security Officer's sign-in never depend on
the directory); any other is tried against the directory, which must accept the passphrase (the
KMA binds as the person) and whose groups must map to at least one role. The roles follow the
directory at each sign-in; a change of the settings ends every directory session, so a new mapping
applies at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict
from urllib.parse import urlsplit

from cryptography import x509

from kma.appliance import Appliance
from kma.directory.ldap import Account, Directory
from kma.domain.roles import Role, format_roles, role_words
from kma.errors import KmaError, ValidationFailed
from kma.services.change import Change
from kma.services.common import typed_row
from kma.services.integrity import row_macs
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.store import Stmt

DIRECTORY_MARK = "directory:"  # a directory account's passphrase_hash: this, then its entry's DN
ATTRIBUTE = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,63}")
MAX_MAPPINGS = 100
MAX_TEXT = 1024
ATTRIBUTE_DEFAULTS = (
    ("user_attribute", "sAMAccountName"),
    ("group_attribute", "memberOf"),
    ("name_attribute", "displayName"),
)


class DirectoryUnavailable(KmaError):
    """The directory cannot be reached or not verified: its people cannot sign in now; local ones can."""

    code, status = "directory_unavailable", 503


class GroupRoles(TypedDict):
    group: str  # a directory group's DN
    roles: list[str]  # the roles its members get


class Settings(TypedDict):
    """The settings as a Security Officer set them. Not a row but one JSON text: the store keeps it
    whole in `directory_settings.settings`, sealed by a row MAC, and a SET_DIRECTORY quorum
    operation carries it whole in its parameters until the M-th approval writes it."""

    enabled: bool
    url: str
    start_tls: bool
    ca_pem: str
    bind_format: str
    search_base: str
    user_attribute: str
    group_attribute: str
    name_attribute: str
    group_roles: list[GroupRoles]


@dataclass(frozen=True)
class DirectoryRow:
    """The settings in force, and when they were set; the API's `DirectorySettings` reads it."""

    enabled: bool
    url: str
    start_tls: bool
    ca_pem: str
    bind_format: str
    search_base: str
    user_attribute: str
    group_attribute: str
    name_attribute: str
    group_roles: list[GroupRoles]
    updated_at: int


def is_directory_account(passphrase_hash: str) -> bool:
    return passphrase_hash.startswith(DIRECTORY_MARK)


def _text(value: Any, what: str, required: bool = True) -> str:
    text = str(value or "").strip()
    if required and not text:
        raise ValidationFailed(f"{what} is required.")
    if len(text) > MAX_TEXT or any(c in text for c in "\r\n\0"):
        raise ValidationFailed(f"{what} must be one line of at most {MAX_TEXT} characters.")
    return text


def _url(value: Any, start_tls: bool) -> str:
    url = _text(value, "The directory's URL")
    parts = urlsplit(url)
    try:
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        port_ok = False
    if (
        parts.scheme not in ("ldap", "ldaps")
        or not parts.hostname
        or not port_ok
        or parts.path not in ("", "/")
    ):
        raise ValidationFailed(
            "The directory's URL is ldaps://host[:port] or ldap://host[:port] (with StartTLS)."
        )
    if parts.scheme == "ldap" and not start_tls:
        raise ValidationFailed(
            "An ldap:// directory needs StartTLS: passphrases never cross the network in clear."
        )
    if parts.scheme == "ldaps" and start_tls:
        raise ValidationFailed("An ldaps:// directory is TLS already: StartTLS is for ldap:// only.")
    return url


def _ca(value: Any) -> str:
    text = str(value or "")
    try:
        x509.load_pem_x509_certificates(text.encode())
    except ValueError:
        raise ValidationFailed("The directory's CA must be one or more PEM certificates.") from None
    return text


def _mappings(value: Any) -> list[GroupRoles]:
    if not isinstance(value, list) or len(value) > MAX_MAPPINGS:
        raise ValidationFailed(f"The group mappings are a list of at most {MAX_MAPPINGS}.")
    out: list[GroupRoles] = []
    for item in value:
        group = _text(item.get("group") if isinstance(item, Mapping) else None, "A mapping's group DN")
        roles = item.get("roles") or []
        try:
            role_text = format_roles([Role(r) for r in roles])
        except ValueError:
            raise ValidationFailed(f"Roles must be among: {', '.join(Role)}.") from None
        if not role_text:
            raise ValidationFailed(f"The group '{group}' maps to no role.")
        if any(m["group"].lower() == group.lower() for m in out):
            raise ValidationFailed(f"The group '{group}' is mapped twice.")
        out.append({"group": group, "roles": role_text.split(",")})
    return out


def check_settings(request: Mapping[str, Any]) -> Settings:
    """The settings as stored, validated; a clear message for the first thing wrong."""
    start_tls = bool(request.get("start_tls", False))
    bind_format = _text(request.get("bind_format"), "The bind format")
    rest = bind_format.replace("{user}", "", 1)
    if "{user}" not in bind_format or "{" in rest or "}" in rest:
        raise ValidationFailed(
            "The bind format holds '{user}' once, as in '{user}@corp.example' or 'uid={user},ou=people,...'."
        )
    attributes = {}
    for field, default in ATTRIBUTE_DEFAULTS:
        name = str(request.get(field) or default)
        if not ATTRIBUTE.fullmatch(name):
            raise ValidationFailed(f"'{name}' is not an LDAP attribute name.")
        attributes[field] = name
    return Settings(
        enabled=bool(request.get("enabled", True)),
        url=_url(request.get("url"), start_tls),
        start_tls=start_tls,
        ca_pem=_ca(request.get("ca_pem")),
        bind_format=bind_format,
        search_base=_text(request.get("search_base"), "The search base"),
        user_attribute=attributes["user_attribute"],
        group_attribute=attributes["group_attribute"],
        name_attribute=attributes["name_attribute"],
        group_roles=_mappings(request.get("group_roles", [])),
    )


def get_directory(kma: Appliance) -> DirectoryRow | None:
    """The settings in force: None when none were set, or when the row is not genuine (a forged one
    grants nothing, and `genuine` reports it)."""
    row = kma.store.query_one("SELECT id, settings, updated_at, mac FROM directory_settings WHERE id = 1")
    if row is None or not row_macs.genuine(kma, row_macs.DIRECTORY, row):
        return None
    return typed_row(DirectoryRow, {**json.loads(row["settings"]), "updated_at": int(row["updated_at"])})


def directory_of(settings: DirectoryRow) -> Directory:
    return Directory(
        settings.url,
        settings.start_tls,
        settings.ca_pem,
        settings.bind_format,
        settings.search_base,
        settings.user_attribute,
        settings.group_attribute,
        settings.name_attribute,
    )


def roles_of(settings: DirectoryRow, account: Account) -> str:
    """The roles the account's groups grant (DNs compared without regard to case, as LDAP does)."""
    groups = {g.lower() for g in account.groups}
    roles = {Role(r) for m in settings.group_roles if m["group"].lower() in groups for r in m["roles"]}
    return format_roles(sorted(roles))


def describe(settings: Settings) -> str:
    if not settings["enabled"]:
        return "Turn directory sign-in off"
    maps = "; ".join(f"{m['group']} -> {role_words(','.join(m['roles']))}" for m in settings["group_roles"])
    return f"Directory sign-in from {settings['url']}: {maps or 'no group mapped'}"


def set_directory_change(kma: Appliance, settings: Settings) -> Change:
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return Change(
        "directory.set",
        [
            Stmt(
                "INSERT INTO directory_settings (id, settings, updated_at) VALUES (1, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET settings = excluded.settings, "
                "updated_at = excluded.updated_at",
                (text, kma.clock.now()),
            ),
            row_macs.seal(kma.vault.row_mac_key(), row_macs.DIRECTORY, {"id": 1, "settings": text}),
            # A new mapping applies at once: directory sessions end, their people sign in again.
            Stmt(
                "DELETE FROM sessions WHERE user_id IN "
                "(SELECT id FROM users WHERE passphrase_hash LIKE 'directory:%')"
            ),
        ],
        describe(settings),
        ("directory", "settings"),
    )


def _prepare_set_directory(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    settings = check_settings(request)
    count = len(x509.load_pem_x509_certificates(settings["ca_pem"].encode()))
    shown = {**settings, "ca_pem": f"({count} CA certificate{'s' if count > 1 else ''})"}
    return Prepared(describe(settings), shown, {"settings": settings})


def _execute_set_directory(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    # The parameters are JSON again: checked once more (what check_settings made it returns as is),
    # they are Settings, not a dict taken on trust.
    return Outcome(set_directory_change(kma, check_settings(p["settings"])))


SET_DIRECTORY = OpType("set_directory", _prepare_set_directory, _execute_set_directory)
