"""What this release of the KMA offers a manager, by name: answered without sign-in at
GET /api/v1/about, so that a manager of another release hides what this KMA lacks (with a note)
instead of meeting 404s. A feature added to the API gets a name here; a name is never reused.
"""

from __future__ import annotations

# The major version of the management API (/api/v1). It changes only when a change would break a
# manager that knows the older one; a manager refuses, naming the KMA, a major it does not know.
API_VERSION = 1

CAPABILITIES: dict[str, str] = {
    "about": "this answer: release, API version, capabilities",
    "users.permissions": "GET /auth/me names what the user may do, by the grant table's names",
    "cluster.topology": "the cluster at a glance (GET /cluster/topology)",
    "cluster.membership": "adding and removing KMAs under quorum, one-time KMA passphrases",
    "cluster.versions": "each KMA's release, schema and rqlited release on the KMAs and topology",
    "cluster.upgrade-check": "whether the cluster is ready for a rolling upgrade, and its order",
    "quorum.key-split": "the key split, its change and enrolment, autonomous unlock",
    "backups.database": "database backups: make, list, download, delete",
    "backups.schedule": "database backups taken on a schedule",
    "backups.core": "the core security backup",
    "audit.retention": "audit retention, signed checkpoints, pruning",
    "audit.forwarding": "the audit trail copied to a syslog collector over TLS",
    "alerts": "alert channels (SNMPv3, webhooks, e-mail) with warnings and chosen audit events",
    "users.directory": "directory sign-in (LDAP, Active Directory): groups mapped to roles under quorum",
    "users.second-factor": "two-step sign-in: TOTP codes and recovery codes after the passphrase",
    "media.pools": "media pools, drive generations and the media rules on write keys (docs/media.md)",
    "users.second-factor-policy": "the roles that must sign in in two steps, set under quorum",
    "reports.compliance": "signed reports: key inventory, cryptoperiods, agents, quorum operations",
    "reports.schedule": "signed reports made on a schedule into a folder, and sent by e-mail",
}
