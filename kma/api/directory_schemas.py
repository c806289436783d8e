"""Directory sign-in's settings on the wire (docs/directory.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from kma.api.quorum_schemas import WithCredentials
from kma.api.schemas import Request, Response, Time

Line = Annotated[str, Field(max_length=1024)]


class GroupRoles(Request):
    group: Line = Field(
        description="A directory group's DN, e.g. `cn=KMS Security,ou=Groups,dc=corp,dc=example`."
    )
    roles: list[str] = Field(max_length=6, description="The roles its members get on this KMS.")


class DirectoryPut(WithCredentials):
    enabled: bool = True
    url: Line = Field(description="`ldaps://host[:port]`, or `ldap://host[:port]` with `start_tls`.")
    start_tls: bool = False
    ca_pem: Annotated[str, Field(max_length=65536)] = Field(
        description="The CA that signed the directory's certificate (PEM): the only one trusted."
    )
    bind_format: Line = Field(
        description="How a user ID becomes the name bound as: `{user}@corp.example` (Active Directory) "
        "or `uid={user},ou=people,dc=example,dc=org`."
    )
    search_base: Line = Field(description="Where the user's own entry is searched for (their groups).")
    user_attribute: Line = "sAMAccountName"
    group_attribute: Line = "memberOf"
    name_attribute: Line = "displayName"
    group_roles: list[GroupRoles] = Field(default_factory=list, max_length=100)


class GroupRolesOut(Response):
    group: str
    roles: list[str]


class DirectorySettings(Response):
    configured: bool  # false: no directory was set; local accounts only
    enabled: bool = False
    url: str = ""
    start_tls: bool = False
    ca_pem: str = ""
    bind_format: str = ""
    search_base: str = ""
    user_attribute: str = "sAMAccountName"
    group_attribute: str = "memberOf"
    name_attribute: str = "displayName"
    group_roles: list[GroupRolesOut] = Field(default=[])
    updated_at: Time | None = None
