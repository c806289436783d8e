"""One router per area; `ROUTERS` is the list the app mounts under /api/v1."""

from __future__ import annotations

from kma.api.routes import (
    agents,
    audit,
    auth,
    data_units,
    keys,
    kmas,
    policies,
    sites,
    status,
    users,
)

ROUTERS = [
    status.router,
    auth.router,
    sites.router,
    kmas.router,
    users.router,
    policies.router,
    agents.router,
    data_units.router,
    keys.router,
    audit.router,
]

from kma.api.routes import history, series  # noqa: E402  the auditor's view: histories, chart series

ROUTERS += [history.router, series.router]

from kma.api.routes import quorum  # noqa: E402  pending quorum operations, key split

ROUTERS += [quorum.router]

from kma.api.routes import membership  # noqa: E402  a KMA's entry, its passphrase, the join

ROUTERS += [membership.router]
from kma.api.routes import backups  # noqa: E402  database backups, the core security backup

ROUTERS += [backups.router]

from kma.api.routes import audit_forwarding, topology  # noqa: E402  the cluster at a glance

ROUTERS += [topology.router, audit_forwarding.router]

from kma.api.routes import alerts  # noqa: E402  alert channels (SNMPv3, webhooks, e-mail)

ROUTERS += [alerts.router]

from kma.api.routes import transfer_partners  # noqa: E402  transfer partners, exports, imports

ROUTERS += [transfer_partners.router]
from kma.api.routes import directory, reports  # noqa: E402  directory sign-in; signed reports

ROUTERS += [directory.router, reports.router]
from kma.api.routes import media_pools  # noqa: E402  media pools and the media rules

ROUTERS += [media_pools.router]
