"""First set-up in tests (issue 13): the answers an installer gives, in the shapes the set-up API
and `kma init --answers` take, and what to compare between two KMAs set up from them."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from kms_client import ROLES
from tests.support.kma_process import RunningKma, run_kma
from tests.support.waiting import wait_until

MEMBERS = [
    ("alice", "alice walks the long pier"),
    ("bob", "bob paints seven green doors"),
    ("carol", "carol counts quiet harbour lights"),
]
OFFICER = {"id": "so", "name": "Sam Officer", "passphrase": "officer keeps the vault"}


def answers_for(kma_address: str, service_port: int) -> dict[str, Any]:
    """What the wizard sends at the end (members by name: their passphrases are already sealed)."""
    return {
        "mode": "new_cluster",
        "cluster_name": "Acme Tape Vault",
        "site": {"id": "dallas", "name": "Dallas"},
        "kma": {
            "id": "kma-dal-1",
            "name": "KMA Dallas 1",
            "management_address": kma_address,
            "service_address": f"127.0.0.1:{service_port}",
        },
        "security_officer": OFFICER,
        "threshold": 2,
        "members": [name for name, _ in MEMBERS],
        "autonomous_unlock": False,
        "key_pool_size": 25,
        # Two-step sign-in of Security Officers is the default; tests of it ask for it by name.
        "second_factor_roles": [],
    }


def written(kma: RunningKma) -> list[str]:
    """What is in the data directory besides its lock and log."""
    return sorted(
        str(p.relative_to(kma.data_dir))
        for p in kma.data_dir.rglob("*")
        if p.name != "kma.lock" and "logs" not in p.parts
    )


def answers_toml(answers: dict[str, Any]) -> str:
    kma, site, officer = answers["kma"], answers["site"], answers["security_officer"]
    members = "".join(f'[[key_split.members]]\nname = "{n}"\npassphrase = "{p}"\n' for n, p in MEMBERS)
    text = (
        f'mode = "new_cluster"\ncluster_name = "{answers["cluster_name"]}"\n'
        f"autonomous_unlock = {str(answers['autonomous_unlock']).lower()}\n"
        f"key_pool_size = {answers['key_pool_size']}\n"
        f"second_factor_roles = {answers.get('second_factor_roles', ['security_officer'])!r}\n"
        f'[site]\nid = "{site["id"]}"\nname = "{site["name"]}"\n'
        f'[kma]\nid = "{kma["id"]}"\nname = "{kma["name"]}"\n'
        f'management_address = "{kma["management_address"]}"\n'
        f'service_address = "{kma["service_address"]}"\n'
        f'[security_officer]\nid = "{officer["id"]}"\nname = "{officer["name"]}"\n'
        f'passphrase = "{officer["passphrase"]}"\n'
        f"[key_split]\nthreshold = {answers['threshold']}\n{members}"
    )
    tomllib.loads(text)
    return text


def describe(client: Any) -> dict[str, Any]:
    """What an installer chose, as a signed-in Security Officer sees it on any KMA."""
    split = client.get_key_split()
    status = client.get_status()
    return {
        "users": sorted((u.id, u.name, tuple(sorted(u.roles))) for u in client.iter_all(client.list_users)),
        "split": (split.threshold, split.members),
        "cluster": status.cluster_name,
        "autonomous_unlock": status.autonomous_unlock,
        "kmas": sorted((k.id, k.name, k.site_id, k.key_pool_size) for k in client.iter_all(client.list_kmas)),
        "policies": sorted(p.id for p in client.iter_all(client.list_key_policies)),
        "second_factor_roles": client.get_second_factor_policy().roles,
    }


# The smallest KMA `kma init` makes: one KMA on loopback ports, a key split of one member.
ONE_KMA_ANSWERS = """
cluster_name = "New Vault"
key_pool_size = {key_pool_size}
second_factor_roles = []
[site]
id = "dallas"
name = "Dallas"
[kma]
id = "kma-1"
name = "KMA Dallas 1"
management_address = "127.0.0.1:0"
service_address = "127.0.0.1:0"
[security_officer]
id = "so"
name = "Sam Officer"
passphrase = "correct horse battery"
[key_split]
threshold = 1
[[key_split.members]]
name = "alice"
passphrase = "alice passphrase"
"""
ONE_KMA_MEMBER = ("alice", "alice passphrase")


def init_one_kma(data_dir: Path, key_pool_size: int = 5) -> None:
    """`kma init` of the smallest KMA into `data_dir` (its answers file beside it)."""
    answers = data_dir.parent / f"{data_dir.name}-answers.toml"
    answers.write_text(ONE_KMA_ANSWERS.format(key_pool_size=key_pool_size))
    run_kma("init", "--data-dir", str(data_dir), "--answers", str(answers))


def start_one_kma_with_admin(data_dir: Path) -> RunningKma:
    """The KMA `init_one_kma` made, started, with a user `admin` of every role (no demo data, no
    backup): what a new installation looks like to its first administrator."""
    kma = RunningKma(data_dir, {"users": [{"id": "so", "passphrase": "correct horse battery"}]})
    kma.start()
    kma.client("so").create_user(
        "admin", "Ada Admin", list(ROLES), "admin passphrase 1", credentials=[ONE_KMA_MEMBER]
    )
    kma.demo["users"].append({"id": "admin", "passphrase": "admin passphrase 1"})
    return kma


def one_kma_with_keys_waiting(tmp: Path) -> RunningKma:
    """A KMA made with `kma init` (pool of 6 keys): the core security backup and one database
    backup taken, three keys issued, and the refilled pool's three new keys waiting for the next
    backup (the one-KMA rule's dashboard; its screenshot and its GUI test)."""
    init_one_kma(tmp / "kma", key_pool_size=6)
    kma = start_one_kma_with_admin(tmp / "kma")
    admin = kma.client("admin")
    admin.create_key_policy("tape-30d", encryption_period=30 * 86400, cryptoperiod=365 * 86400)
    admin.create_key_group("backup-dallas", "tape-30d")
    wait_until(lambda: admin.get_dashboard().keys_by_state["generated"] >= 6, 60, what="a full key pool")
    admin.take_core_security_backup(tmp / "core.kmacore")
    admin.create_backup()
    for volser in ("E00001", "E00002", "E00003"):
        admin.create_data_unit(volser)
        admin.issue_key("backup-dallas", volser)
    # the pool refills; those keys wait
    wait_until(lambda: admin.get_dashboard().keys_by_state["generated"] >= 3, 60, what="the pool refilled")
    return kma
