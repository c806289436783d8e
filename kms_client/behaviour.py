"""What the client's models do beyond carrying the KMA's fields: the base classes that
scripts/generate-client-models.py gives the generated models of kms_client/wire.py. The one place
for hand-written behaviour over the wire contract. It names no generated class (wire.py imports
it): each base declares the fields it reads, and what it returns by the base of the class it is."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from datetime import datetime

K = TypeVar("K")  # a generated model the base is given as a parameter (it cannot import it)


class KmaVersions:
    if TYPE_CHECKING:
        version: str
        schema_version: int | None
        rqlite_version: str | None

    @property
    def versions(self) -> tuple[str, str, str]:
        """What a KMA runs, as it recorded at its last start: its release, the newest schema that
        release knows, and its cluster node's rqlited (none on an embedded KMA)."""
        schema = "unknown" if self.schema_version is None else str(self.schema_version)
        node = f"rqlited {self.rqlite_version}" if self.rqlite_version else "embedded store (no rqlited)"
        return f"release {self.version}", f"schema {schema}", node

    @property
    def versions_text(self) -> str:
        return ", ".join(self.versions)


class KmaNodeText(KmaVersions):
    if TYPE_CHECKING:
        master_key: str | None

    @property
    def master_key_text(self) -> str:
        return {"software": "master key in software", "pkcs11": "master key in HSM"}.get(
            self.master_key or "", "no master key"
        )


class MemberEnrolmentState:
    if TYPE_CHECKING:
        member: str
        enrolled_at: datetime | None

    @property
    def enrolled(self) -> bool:
        return self.enrolled_at is not None


class PendingQuorumOpState:
    if TYPE_CHECKING:
        state: str
        enrolment: tuple[MemberEnrolmentState, ...]

    @property
    def pending(self) -> bool:
        return self.state == "pending"

    @property
    def awaiting_enrolment(self) -> tuple[str, ...]:
        """New key split members who have not set their passphrase yet."""
        return tuple(e.member for e in self.enrolment if not e.enrolled)


class AuditReportFiles:
    if TYPE_CHECKING:
        html: str
        signature: str

    def save(self, path: Path) -> tuple[Path, Path]:
        """Write PATH (the HTML) and PATH.sig; returns both paths."""
        sig = path.with_name(path.name + ".sig")
        path.write_bytes(self.html.encode("utf-8"))
        sig.write_bytes(self.signature.encode("utf-8"))
        return path, sig


class TopologySiteKmas(Generic[K]):
    if TYPE_CHECKING:
        kmas: tuple[K, ...]


class TopologyKmas(Generic[K]):
    if TYPE_CHECKING:
        sites: tuple[TopologySiteKmas[K], ...]

    @property
    def kmas(self) -> tuple[K, ...]:
        """Every KMA of the cluster, site by site."""
        return tuple(k for site in self.sites for k in site.kmas)


# What a user may do, named as in the KMA's grant table (a User's `permissions`).
PERMISSIONS = (
    "signed_in",
    "users.read",
    "users.write",
    "sites.write",
    "kmas.write",
    "policies.read",
    "policies.write",
    "agents.read",
    "agents.write",
    "data.read",
    "data.write",
    "audit.read",
    "history.read",
    "audit.manage",
    "quorum.read",
    "quorum.approve",
    "quorum.delete",
    "quorum.submit",
    "backups.read",
    "backups.write",
    "backups.core",
    "upgrades.check",
    "alerts.read",
    "alerts.write",
    "transfer.read",
    "transfer.partners",
    "transfer.export",
    "transfer.import",
    "media.read",
    "media.write",
)


class UserPermissions:
    if TYPE_CHECKING:
        permissions: tuple[str, ...]

    def may(self, permission: str) -> bool:
        """Whether the KMA lets this user do `permission` (a name from PERMISSIONS). The KMA still
        decides each request; this is for not offering what it would refuse."""
        if permission not in PERMISSIONS:
            raise ValueError(f"unknown permission {permission!r}; the KMA's are {', '.join(PERMISSIONS)}")
        return permission in self.permissions
