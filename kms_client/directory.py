"""Directory sign-in's settings: a part of `KmsClient`, given its connection (same threading rule:
network I/O, never on the GUI thread). Setting them is quorum-protected."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._http import Credentials, credentials_body, present
from .connection import Connection
from .reader import reader
from .wire import DirectorySettings, PendingQuorumOp


class DirectoryCalls:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def get_directory(self) -> DirectorySettings:
        """Where the directory is and which of its groups grant which roles (`configured` false:
        local accounts only)."""
        return self._connection.call("GET", "/directory", reader(DirectorySettings))

    def set_directory(
        self,
        *,
        url: str,
        ca_pem: str,
        bind_format: str,
        search_base: str,
        group_roles: Mapping[str, Sequence[str]],
        start_tls: bool = False,
        enabled: bool = True,
        user_attribute: str = "sAMAccountName",
        group_attribute: str = "memberOf",
        name_attribute: str = "displayName",
        credentials: Credentials | None = None,
    ) -> DirectorySettings | PendingQuorumOp:
        """Quorum-protected: the settings when M credentials came, else the pending operation.
        `group_roles`: a group's DN -> the roles its members get."""
        body = present(
            enabled=enabled,
            url=url,
            start_tls=start_tls,
            ca_pem=ca_pem,
            bind_format=bind_format,
            search_base=search_base,
            user_attribute=user_attribute,
            group_attribute=group_attribute,
            name_attribute=name_attribute,
            group_roles=[{"group": g, "roles": list(r)} for g, r in group_roles.items()],
            credentials=credentials_body(credentials),
        )
        return self._connection.call_or_pending("PUT", "/directory", reader(DirectorySettings), body)
