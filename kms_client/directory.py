"""Directory sign-in's settings, and two-step sign-in: a part of `KmsClient`, given its connection
(same threading rule: network I/O, never on the GUI thread). Setting the directory and turning a
user's second factor off are quorum-protected."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._http import Credentials, credentials_body, present, segment
from .connection import Connection
from .reader import reader
from .wire import DirectorySettings, PendingQuorumOp, SecondFactorEnrolment, SignedReport


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

    def enrol_second_factor(self) -> SecondFactorEnrolment:
        """The signed-in user's new TOTP secret (as an otpauth:// URI too) and recovery codes,
        shown this once; two-step sign-in is on once `confirm_second_factor` takes a first code."""
        return self._connection.call("POST", "/auth/second-factor", reader(SecondFactorEnrolment))

    def confirm_second_factor(self, code: str) -> None:
        """Two-step sign-in is on from now (`ValidationFailed` for a code that is not the current one)."""
        self._connection.request("POST", "/auth/second-factor/confirm", body={"code": code})

    def turn_off_second_factor(
        self, id: str, *, credentials: Credentials | None = None
    ) -> PendingQuorumOp | None:
        """Quorum-protected: None when it was turned off, else the pending operation."""
        body = present(credentials=credentials_body(credentials))
        path = f"/users/{segment(id)}/second-factor"
        return self._connection.call_or_pending("DELETE", path, lambda _: None, body)

    def get_users_report(self) -> SignedReport:
        """Users and their roles, directory mapping included: a CSV and its detached signature."""
        return self._connection.call("GET", "/reports/users", reader(SignedReport))
