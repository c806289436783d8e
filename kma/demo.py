"""`kma demo`: a KMA ready to explore, with a year of realistic history.

It initialises a cluster, then replays a year of work on a clock that starts 400 days ago:
sites, users of every role, key policies and groups, agents (tape drives) with one-time
enrollment passphrases, data units (tapes) and keys, so that today keys exist in every state
and the audit trail tells how they got there. Passphrases are random; a demo is not a secret, so
all of them (users, key split members, agents' enrollment passphrases) are kept beside the demo
KMA in ``demo-credentials.json`` (0600), where anyone exploring it can find them again.
"""

from __future__ import annotations

import json
import secrets
import string
import time
from typing import Any

from kma.appliance import Appliance
from kma.clock import FixedClock
from kma.cluster.store import open_store
from kma.crypto.hsm_settings import HsmSettings
from kma.datadir import DataDir, write_private
from kma.domain.actor import Actor
from kma.domain.roles import Role
from kma.services import agents, data_units, keys, policies, sites, users
from kma.services.backups import take_core_security_backup
from kma.services.keypool import key_pool
from kma.services.quorum.locking import unlock_autonomously
from kma.setup.answers import Answers, SplitMember
from kma.setup.new_cluster import initialise

DAY = 86400
DEMO_KMA = "kma-dal-1"
DEMO_USERS: list[tuple[str, str, list[Role]]] = [
    ("co", "Casey Compliance", [Role.COMPLIANCE_OFFICER]),
    ("op", "Olu Operator", [Role.OPERATOR]),
    ("backup", "Bea Backup", [Role.BACKUP_OPERATOR]),
    ("auditor", "Avery Auditor", [Role.AUDITOR]),
    ("qm1", "Quinn Member", [Role.QUORUM_MEMBER]),
    ("qm2", "Rowan Member", [Role.QUORUM_MEMBER]),
    ("qm3", "Sasha Member", [Role.QUORUM_MEMBER]),
    ("admin", "Ada Admin", list(Role)),
]


_ALPHABET = string.ascii_letters + string.digits


def _passphrase() -> str:
    """Three groups of eight letters or digits joined by ``-``: never starts with ``-`` (which a
    command line would take for an option) and survives any shell unquoted."""
    return "-".join("".join(secrets.choice(_ALPHABET) for _ in range(8)) for _ in range(3))


def make_demo(data_dir: DataDir, port: int = 8443, hsm: HsmSettings | None = None) -> dict[str, Any]:
    clock = FixedClock(int(time.time()) - 400 * DAY)
    so_pass = _passphrase()
    members = [SplitMember(name, _passphrase()) for name in ("alice", "bob", "carol", "dave", "erin")]
    initialise(
        data_dir,
        Answers(
            cluster_name="Demo Tape Vault",
            site_id="dallas",
            site_name="Dallas",
            kma_id=DEMO_KMA,
            kma_name="KMA Dallas 1",
            management_address=f"127.0.0.1:{port}",
            service_address="127.0.0.1:5696",
            officer_id="so",
            officer_name="Sam Officer",
            officer_passphrase=so_pass,
            threshold=3,
            members=tuple(members),
            key_pool_size=200,
            hsm=hsm,
            # A demo is explored without a phone at hand; docs/directory.md shows how to require it.
            second_factor_roles=(),
        ),
        clock,
    )
    credentials = [
        {"id": "so", "name": "Sam Officer", "roles": [str(Role.SECURITY_OFFICER)], "passphrase": so_pass}
    ]
    kma = Appliance(data_dir, open_store, clock)
    try:
        unlock_autonomously(kma)
        enrollment = _replay_a_year(kma, clock, credentials)
        take_backup(kma, BACKUP_OPERATOR)  # today's: the dashboard shows a fresh one
    finally:
        kma.close()
    from kma.crypto import fingerprint

    info = {
        "data_dir": str(data_dir.root),
        "management_address": f"127.0.0.1:{port}",
        "ca_fingerprint": fingerprint(data_dir.ca_cert.read_bytes()),
        "users": credentials,
        "key_split": {
            "threshold": 3,
            "members": [{"name": m.name, "passphrase": m.passphrase} for m in members],
        },
        "agents": enrollment,
    }
    write_private(data_dir.demo_credentials, json.dumps(info, indent=2).encode())
    return info


BACKUP_OPERATOR = Actor("backup", "10.0.1.23", roles=frozenset({Role.BACKUP_OPERATOR}))


def take_backup(kma: Appliance, actor: Actor) -> None:
    """A database backup, so that this one-KMA cluster's pool keys are Ready and may be issued."""
    from kma.services.backups import create_backup

    key_pool(kma).refill()
    create_backup(kma, actor)


def _replay_a_year(
    kma: Appliance, clock: FixedClock, credentials: list[dict[str, Any]]
) -> list[dict[str, str]]:
    so = Actor("so", "10.0.1.20", roles=frozenset({Role.SECURITY_OFFICER}))
    co = Actor("co", "10.0.1.21", roles=frozenset({Role.COMPLIANCE_OFFICER}))
    op = Actor("op", "10.0.1.22", roles=frozenset({Role.OPERATOR}))
    sites.create_site(kma, so, "boston", "Boston", "Second data centre")
    for user_id, name, roles in DEMO_USERS:
        passphrase = _passphrase()
        users.create_user(kma, so, user_id, name, [str(r) for r in roles], passphrase)
        credentials.append(
            {"id": user_id, "name": name, "roles": [str(r) for r in roles], "passphrase": passphrase}
        )
    # Day one of a one-KMA cluster: the core security backup, then a database backup, before any
    # key is issued (a key is Ready only once a backup holds it). The demo keeps the core security
    # backup beside its credentials; a real one is kept offline.
    write_private(kma.data_dir.root / "demo-core-security-backup.kmacore", take_core_security_backup(kma, so))
    take_backup(kma, BACKUP_OPERATOR)

    policies.create_key_policy(
        kma,
        co,
        "tape-30d",
        30 * DAY,
        365 * DAY,
        "Backup tapes: 30-day writes, 1-year life",
        allow_export=True,
    )
    policies.create_key_policy(
        kma, co, "archive-7y", 365 * DAY, 7 * 365 * DAY, "Archive: 1-year writes, 7-year life"
    )
    policies.create_key_group(kma, co, "backup-dallas", "tape-30d", "Nightly backups, Dallas")
    policies.create_key_group(kma, co, "backup-boston", "tape-30d", "Nightly backups, Boston")
    policies.create_key_group(kma, co, "archive", "archive-7y", "Long-term archive")

    drives = [
        ("t10k-dal-01", "dallas", "backup-dallas", "T10000B, library SL3000 Dallas"),
        ("t10k-dal-02", "dallas", "backup-dallas", "T10000B, library SL3000 Dallas"),
        ("lto4-dal-01", "dallas", "archive", "HP LTO4, archive library"),
        ("t10k-bos-01", "boston", "backup-boston", "T10000, library SL8500 Boston"),
        ("9840d-bos-01", "boston", "backup-boston", "T9840D, library SL8500 Boston"),
    ]
    for agent_id, site, group, description in drives:
        agents.create_agent(kma, op, agent_id, site, group, description)
    policies.set_key_group_agents(kma, co, "archive", ["lto4-dal-01", "t10k-dal-01"])

    # Tapes written over the year: day 0 (400 days ago) to day 395 (5 days ago).
    schedule = [
        (0, "E00001", "backup-dallas"),
        (0, "E00002", "backup-dallas"),
        (10, "E00003", "backup-boston"),
        (20, "A00001", "archive"),
        (300, "E00004", "backup-dallas"),
        (310, "E00005", "backup-boston"),
        (330, "E00006", "backup-dallas"),
        (395, "E00007", "backup-dallas"),
        (395, "E00008", "backup-boston"),
        (396, "A00002", "archive"),
    ]
    issued: dict[str, str] = {}
    day = 0
    for when, volser, group in schedule:
        clock.advance((when - day) * DAY)
        day = when
        data_units.create_data_unit(kma, op, volser, f"Cartridge {volser}")
        issued[volser] = keys.issue_key(kma, op, group, volser).id
    data_units.create_data_unit(kma, op, "E00009", "Scratch cartridge, not yet written")
    clock.advance(2 * DAY)
    keys.compromise_key(kma, op, issued["E00005"], "Cartridge lost in transit to the vault")
    clock.current = int(time.time()) - 1 * DAY
    keys.destroy_key(kma, op, issued["E00001"], "Retention ended: backup set expired")
    keys.destroy_key(kma, op, issued["E00002"], "Retention ended: backup set expired")
    clock.current = int(time.time())
    # Today, so that they have not expired (enrollment passphrases last a week).
    return [
        {"id": agent_id, "enrollment_passphrase": agents.new_enrollment_passphrase(kma, op, agent_id)}
        for agent_id, *_ in drives
    ]
