"""Binding to an LDAP directory or Active Directory as the user, and reading their groups.

The library is ldap3: pure Python with TLS through the standard library's `ssl` (as everything else
the KMA speaks), a universal wheel for every platform the KMA and the manager's bundled KMA ship on.
python-ldap and bonsai wrap OpenLDAP's libldap and need its headers and a compiler where they have
no wheel (python-ldap has none on PyPI). ldap3's last release is from 2021; what the KMA uses of it
(a simple bind, StartTLS, one search) is LDAP's stable core, kept behind `authenticate` and tested
against a real slapd (tests/integration/test_directory.py).

The KMA keeps no directory password, not even a service account's: it binds as the person signing
in, with what they typed, and reads their own entry with their own rights.
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

TIMEOUT = 5  # seconds to connect, and to wait for each answer
INVALID_CREDENTIALS = 49
# A directory account name as typed at sign-in: safe inside a DN and a search filter as it is.
ACCOUNT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class DirectoryUnreachable(Exception):
    """The directory did not answer, or not over TLS with a certificate its pinned CA signed."""


@dataclass(frozen=True)
class Directory:
    """Where the directory is and how its people and groups are found (docs/directory.md)."""

    url: str  # ldaps://host[:port], or ldap://host[:port] with start_tls
    start_tls: bool
    ca_pem: str  # the CA that signed the directory's certificate: the only one trusted
    bind_format: str  # "{user}@corp.example" (AD) or "uid={user},ou=people,dc=example,dc=org"
    search_base: str
    user_attribute: str  # sAMAccountName (AD), uid (OpenLDAP)
    group_attribute: str  # memberOf
    name_attribute: str  # displayName


@dataclass(frozen=True)
class Account:
    dn: str  # the account's entry, as the audit trail names it
    name: str
    groups: tuple[str, ...]  # group DNs, as the directory wrote them


def authenticate(directory: Directory, user: str, password: str) -> Account | None:
    """The account if the directory accepts `password` for `user`; None if it refuses them.

    Raises DirectoryUnreachable when it cannot tell (no answer, TLS refused or not verified)."""
    if not ACCOUNT.fullmatch(user) or not password:
        return None  # an empty password would be an anonymous bind, which proves nothing
    # Imported here: only a KMA with a directory pays for it (every `kma` command imports this module).
    import ldap3
    from ldap3.core.exceptions import LDAPException

    parts = urlsplit(directory.url)
    tls = ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_data=directory.ca_pem)
    server = ldap3.Server(
        parts.hostname or "",
        port=parts.port,
        use_ssl=parts.scheme == "ldaps",
        tls=tls,
        connect_timeout=TIMEOUT,
        get_info=ldap3.NONE,
    )
    bind_name = directory.bind_format.format(user=user)
    connection = ldap3.Connection(
        server, user=bind_name, password=password, receive_timeout=TIMEOUT, read_only=True
    )
    try:
        connection.open()
        if directory.start_tls and not connection.start_tls():
            raise DirectoryUnreachable(f"StartTLS refused: {connection.result.get('description')}")
        if not connection.bind():
            if connection.result.get("result") == INVALID_CREDENTIALS:
                return None
            raise DirectoryUnreachable(f"bind refused: {connection.result.get('description')}")
        return _own_entry(connection, directory, user, bind_name)
    except LDAPException as error:
        raise DirectoryUnreachable(str(error) or type(error).__name__) from None
    finally:
        connection.unbind()


def _own_entry(connection: Any, directory: Directory, user: str, bind_name: str) -> Account:
    """The signed-in user's entry, read with their own rights; no groups when it cannot be found."""
    import ldap3
    from ldap3.utils.conv import escape_filter_chars

    attributes = [directory.group_attribute, directory.name_attribute]
    query = f"({directory.user_attribute}={escape_filter_chars(user)})"
    connection.search(directory.search_base, query, ldap3.SUBTREE, attributes=attributes, size_limit=2)
    found = [e for e in connection.response or [] if e.get("type") == "searchResEntry"]
    if len(found) != 1:
        return Account(bind_name, user, ())
    entry = found[0]
    values = entry.get("attributes", {})
    groups = values.get(directory.group_attribute) or []
    name = values.get(directory.name_attribute) or user
    return Account(
        str(entry["dn"]),
        str(name[0] if isinstance(name, list) and name else name),
        tuple(str(g) for g in groups),
    )
