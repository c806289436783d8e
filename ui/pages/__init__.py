"""Area modules. Importing one registers its page in ``app.pages``; :func:`load_all` imports
every built-in area. A new area (Pending quorum operations, Lock/unlock, the auditor's browser) is a
new module added to ``AREA_MODULES`` — nothing else changes."""

from __future__ import annotations

import importlib

AREA_MODULES = (
    "ui.pages.dashboard",  # the cluster's numbers, with the audit trail's charts below them
    "ui.pages.cluster",  # the cluster as a picture: sites, KMAs, agents, failure tolerance
    "ui.pages.users",
    "ui.pages.directory",  # Directory sign-in: LDAP / Active Directory, groups mapped to roles
    "ui.pages.sites",
    "ui.pages.key_policies",
    "ui.pages.key_groups",
    "ui.pages.agents",
    "ui.pages.data_units",
    "ui.pages.media_pools",  # Media pools, the migration view, tapes to relabel (docs/media.md)
    "ui.pages.keys",
    "ui.pages.settings",
    "ui.quorum.pending",  # Pending approvals: inbox, badge, notifications, locked banner
    "ui.quorum.locking",  # Lock and unlock, autonomous unlock, quorum lifetime
    "ui.pages.backups",  # Database backups, their schedule, the core security backup
    "ui.pages.alerts",  # Alert channels: SNMPv3, webhooks, e-mail; a test alert
    "ui.pages.transfer_partners",  # Transfer partners: identity, partners, export, import wizard
    "ui.pages.planning",  # Planning a deployment from the white paper's measurements (no KMA needed)
    "ui.audit.pages",  # the auditor's browser and histories
)


def load_all() -> None:
    for name in AREA_MODULES:
        importlib.import_module(name)
