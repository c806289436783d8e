"""`kma upgrade check` and the manager's upgrade panel (`GET /cluster/upgrade-check`): whether the
cluster is ready for a rolling upgrade, and the order to upgrade its KMAs in (docs/upgrades.md).

Read-only: it joins what the topology knows of each KMA (responding, its outbox as last reported),
what each KMA says of itself (caught up, `GET /status`) and the age of the newest database backup.
Each failed check names what to do.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from kma.appliance import Appliance
from kma.cluster.topology import trusted_nodes
from kma.services.backups import describe_duration
from kma.services.keypool import key_pool
from kms_client import KmsClient, KmsError, fingerprint_of

# What the order tells of each KMA.
STEP = (
    "id",
    "name",
    "site_id",
    "witness",
    "leader",
    "this_kma",
    "version",
    "schema_version",
    "rqlite_version",
)
# The newest database backup must be younger than this: the way back should an upgrade go wrong.
BACKUP_MAX_AGE_S = 24 * 3600
PEER_TIMEOUT_S = 5.0  # asking another KMA whether it is caught up


@dataclass(frozen=True)
class Check:
    name: str  # responding | caught-up | outbox | backup
    ok: bool
    message: str  # what was found
    todo: str = ""  # what to do, when it failed
    kma_id: str | None = None  # the KMA it is about; None: the cluster


def _caught_up(kma: Appliance, node: dict[str, Any]) -> bool | None:
    """Whether a KMA's replica holds what the cluster had committed at its start, as it says itself
    (`GET /status`, no sign-in, over TLS verified against the cluster CA); None: it did not answer.
    A witness has no API: its Raft node responding is all there is to know."""
    if node["this_kma"]:
        return kma.store.caught_up()
    if node["witness"] or not node["management_address"]:
        return True
    ca = kma.data_dir.ca_cert.read_text(encoding="ascii")
    try:
        with KmsClient(
            node["management_address"],
            ca_pem=ca,
            ca_fingerprint=fingerprint_of(ca),
            timeout=PEER_TIMEOUT_S,
            kma_id=node["id"],  # the KMA its signed entry names, not whoever answers there
        ) as peer:
            return peer.get_status().caught_up
    except KmsError:
        return None


def kma_words(name: str, kma_id: str) -> str:
    """ "KMA Dallas 1 (kma-dal-1)", or "KMA vault-a (kma-a)": the word KMA once, whatever the name."""
    said = name if re.search(r"\bKMA\b", name, re.IGNORECASE) else f"KMA {name}"
    return f"{said} ({kma_id})"


def _kma_checks(node: dict[str, Any], awaiting: bool, caught_up: bool | None) -> list[Check]:
    who, kma_id = kma_words(node["name"], node["id"]), node["id"]
    if awaiting:
        return [
            Check(
                "responding",
                False,
                f"{who} is an entry whose machine has not joined.",
                "Finish its join (kma init on its machine) or remove the entry, then check again.",
                kma_id,
            )
        ]
    if not node["responding"]:
        return [
            Check(
                "responding",
                False,
                f"{who} does not respond.",
                "Start it and wait until it is caught up; if its machine is gone for good, remove it "
                "from the cluster. Then check again.",
                kma_id,
            )
        ]
    checks = [Check("responding", True, f"{who} responds.", kma_id=kma_id)]
    if caught_up is None:
        checks.append(
            Check(
                "caught-up",
                False,
                f"{who} takes part in Raft but its API at {node['management_address']} does not answer.",
                "Check its service (`systemctl status kma`, its logs/kma.log), then check again.",
                kma_id,
            )
        )
    elif not caught_up:
        checks.append(
            Check(
                "caught-up",
                False,
                f"{who}'s replica has not caught up with the cluster.",
                "Wait until `kma status` on it says caught up, then check again.",
                kma_id,
            )
        )
    else:
        checks.append(Check("caught-up", True, f"{who} is caught up with the cluster.", kma_id=kma_id))
    lag = node["replication_lag"]
    if lag is not None and lag["depth"]:
        checks.append(
            Check(
                "outbox",
                False,
                f"{who} has {lag['depth']} writes not yet in the cluster's store (the oldest "
                f"{lag['age_seconds']:.0f} s old).",
                "Wait until its outbox is empty (its replication lag on the Cluster page or "
                "in `kma cluster status`); if it stays, check its link to the other sites. Then "
                "check again.",
                kma_id,
            )
        )
    else:
        checks.append(Check("outbox", True, f"{who} has no write waiting for the cluster.", kma_id=kma_id))
    return checks


def _backup_check(kma: Appliance) -> Check:
    last = kma.store.scalar("SELECT max(created_at) FROM backups WHERE deleted_at IS NULL")
    todo = (
        "Have a Backup Operator take a database backup (the manager's Backups page, or `kma backup "
        "create`), then check again: it is the way back should the upgrade go wrong."
    )
    if last is None:
        return Check("backup", False, "There is no database backup.", todo)
    age = max(0, kma.clock.now() - int(last))
    if age > BACKUP_MAX_AGE_S:
        return Check(
            "backup",
            False,
            f"The newest database backup is {describe_duration(age)} old "
            f"(at most {BACKUP_MAX_AGE_S // 3600} h for an upgrade).",
            todo,
        )
    pool = key_pool(kma)
    waiting = pool.waiting() if pool.alone() else 0
    if waiting:  # a one-KMA cluster's keys since then exist nowhere but on this machine
        return Check(
            "backup",
            False,
            f"The newest database backup is {describe_duration(age)} old, but {waiting:,} keys made since "
            "wait for one: they exist nowhere else.",
            todo,
        )
    return Check("backup", True, f"The newest database backup is {describe_duration(age)} old.")


def upgrade_order(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Witnesses first (they serve no keys: no drive notices), then the KMAs of the sites with the
    most spare KMAs (the others of the site serve its drives meanwhile), the Raft leader after the
    other KMAs (one election, not one per step), and the KMA answering (the one the manager or the
    CLI is connected to) last, so the session that follows the upgrade stays up until the end."""
    serving: dict[str, int] = {}
    for n in nodes:
        if not n["witness"]:
            serving[n["site_id"]] = serving.get(n["site_id"], 0) + 1
    return sorted(
        nodes,
        key=lambda n: (
            n["this_kma"],
            n["leader"],
            not n["witness"],
            -serving.get(n["site_id"], 0),
            n["site_id"],
            n["name"],
            n["id"],
        ),
    )


def upgrade_check(kma: Appliance) -> dict[str, Any]:
    nodes = trusted_nodes(kma)  # a KMA is asked only at a signed management address
    with ThreadPoolExecutor(max_workers=8) as pool:  # one slow KMA does not hold up asking the others
        asked = {n["id"]: pool.submit(_caught_up, kma, n) for n in nodes if n["responding"]}
        caught_up = {kma_id: future.result() for kma_id, future in asked.items()}
    awaiting = {
        r["id"] for r in kma.store.query("SELECT id FROM kmas WHERE awaiting_join AND removed_at IS NULL")
    }
    checks = [c for n in nodes for c in _kma_checks(n, n["id"] in awaiting, caught_up.get(n["id"]))]
    checks.append(_backup_check(kma))
    order = [n for n in upgrade_order(nodes) if n["id"] not in awaiting]
    if kma.store.cluster is None:  # one embedded KMA: no Raft, so no leader to speak of
        order = [{**n, "leader": False} for n in order]
    return {
        "ready": all(c.ok for c in checks),
        "checks": [asdict(c) for c in checks],
        "order": [{key: n[key] for key in STEP} for n in order],
    }
