"""The six roles and what each may do: one table the API enforces on every route."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    SECURITY_OFFICER = "security_officer"
    COMPLIANCE_OFFICER = "compliance_officer"
    OPERATOR = "operator"
    BACKUP_OPERATOR = "backup_operator"
    AUDITOR = "auditor"
    QUORUM_MEMBER = "quorum_member"


def role_words(role_text: str) -> str:
    """``security_officer,auditor`` -> ``Security Officer, Auditor``: for summaries and audit
    messages people read (the canonical request keeps the stored names)."""
    return ", ".join(Role(r).value.replace("_", " ").title() for r in role_text.split(",") if r)


class Permission(StrEnum):
    SIGNED_IN = "signed_in"
    USERS_READ = "users.read"
    USERS_WRITE = "users.write"
    SITES_WRITE = "sites.write"
    KMAS_WRITE = "kmas.write"
    POLICIES_READ = "policies.read"
    POLICIES_WRITE = "policies.write"
    AGENTS_READ = "agents.read"
    AGENTS_WRITE = "agents.write"
    DATA_READ = "data.read"  # data units and keys
    DATA_WRITE = "data.write"
    AUDIT_READ = "audit.read"
    # One object's lifecycle and its own events (a key's, a data unit's, an agent's): whoever works
    # with those objects reads how they came to be so, not only the audit readers.
    HISTORY_READ = "history.read"
    AUDIT_MANAGE = "audit.manage"  # retention, signed checkpoints, pruning, forwarding
    QUORUM_READ = "quorum.read"  # pending quorum operations and the key split configuration
    QUORUM_APPROVE = "quorum.approve"
    QUORUM_DELETE = "quorum.delete"
    QUORUM_SUBMIT = "quorum.submit"  # lock/unlock, key split, autonomous unlock, operation lifetime
    BACKUPS_READ = "backups.read"  # the list of backups and whether the core security backup is current
    BACKUPS_WRITE = "backups.write"  # make, download, delete database backups; their schedule
    CORE_BACKUP = "backups.core"  # take the core security backup
    UPGRADE_CHECK = "upgrades.check"  # whether the cluster is ready for a rolling upgrade, its order
    ALERTS_READ = "alerts.read"  # the alert channels (never their secrets) and how each fares
    ALERTS_WRITE = "alerts.write"  # add, change, remove alert channels; send a test alert
    TRANSFER_READ = "transfer.read"  # this cluster's transfer identity and its transfer partners
    TRANSFER_PARTNERS = "transfer.partners"  # register (under quorum), enable, disable, remove partners
    TRANSFER_EXPORT = "transfer.export"  # export data units' keys to a partner
    TRANSFER_IMPORT = "transfer.import"  # preview and import a partner's transfer file
    MEDIA_READ = "media.read"  # media pools, their migration view, the relabel list, media settings
    MEDIA_WRITE = "media.write"  # define media pools and the media settings (docs/media.md)


SO, CO, OP, BO, AU, QM = Role

GRANTS: dict[Permission, frozenset[Role]] = {
    Permission.SIGNED_IN: frozenset(Role),
    Permission.USERS_READ: frozenset({SO, AU}),
    Permission.USERS_WRITE: frozenset({SO}),
    Permission.SITES_WRITE: frozenset({SO}),
    Permission.KMAS_WRITE: frozenset({SO}),
    Permission.POLICIES_READ: frozenset({CO, OP, AU, SO}),
    Permission.POLICIES_WRITE: frozenset({CO}),
    Permission.AGENTS_READ: frozenset({OP, CO, AU, SO}),
    Permission.AGENTS_WRITE: frozenset({OP}),
    Permission.DATA_READ: frozenset({OP, CO, AU}),
    Permission.DATA_WRITE: frozenset({OP}),
    Permission.AUDIT_READ: frozenset({AU, SO, CO}),
    Permission.HISTORY_READ: frozenset({AU, SO, CO, OP}),
    Permission.AUDIT_MANAGE: frozenset({SO}),
    Permission.QUORUM_READ: frozenset({QM, SO, AU}),
    Permission.QUORUM_APPROVE: frozenset({QM}),
    Permission.QUORUM_DELETE: frozenset({SO}),
    Permission.QUORUM_SUBMIT: frozenset({SO}),
    Permission.BACKUPS_READ: frozenset({BO, SO, AU}),
    Permission.BACKUPS_WRITE: frozenset({BO}),
    Permission.CORE_BACKUP: frozenset({SO}),
    Permission.UPGRADE_CHECK: frozenset({SO}),
    Permission.ALERTS_READ: frozenset({SO, AU}),
    Permission.ALERTS_WRITE: frozenset({SO}),
    Permission.TRANSFER_READ: frozenset({SO, CO, OP, AU}),
    Permission.TRANSFER_PARTNERS: frozenset({SO}),
    Permission.TRANSFER_EXPORT: frozenset({OP}),
    Permission.TRANSFER_IMPORT: frozenset({SO}),
    Permission.MEDIA_READ: frozenset({SO, OP, CO, AU}),
    Permission.MEDIA_WRITE: frozenset({SO}),
}


def allows(roles: frozenset[Role], permission: Permission) -> bool:
    return bool(roles & GRANTS[permission])


def permissions_of(roles: frozenset[Role]) -> list[str]:
    """What a user with `roles` may do, by permission name: the manager asks this, not the roles."""
    return [str(p) for p in Permission if allows(roles, p)]


def parse_roles(text: str) -> frozenset[Role]:
    return frozenset(Role(r) for r in text.split(",") if r)


def format_roles(roles: frozenset[Role] | list[Role]) -> str:
    return ",".join(sorted(str(r) for r in roles))
