"""The `kma` command: first set-up, serving, status, audit verification, demo data and planning."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from kma import __version__
from kma.cli import (
    admin,
    agent,
    backup,
    cluster_status,
    convert,
    membership,
    plan,
    quorum,
    serve,
    transfer,
    upgrade,
)
from kma.datadir import keep_private
from kma.errors import KmaError

COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    admin.add_init,
    serve.add_serve,
    admin.add_status,
    admin.add_audit,
    admin.add_demo,
    quorum.add_quorum_commands,  # quorum, lock, unlock: through a running KMA's API
    agent.add_agent,  # agent enroll, agent simulate: an encryption agent's side
    plan.add_plan,  # planning a deployment: needs no KMA
    convert.add_convert,  # convert-to-cluster: an embedded KMA becomes a cluster's first node
    backup.add_backup,  # backup create, list, core: through a running KMA's API
    cluster_status.add_cluster_commands,  # kma cluster status: through a running KMA's API
    membership.add_member_commands,  # kma cluster add-kma, kma-passphrase (after `kma cluster status`)
    upgrade.add_upgrade_commands,  # kma upgrade check: through a running KMA's API
    transfer.add_transfer,  # kma transfer ...: partners and transfer files through a running KMA's API
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kma", description="The reference Key Management Appliance.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    keep_private()  # before anything is created: data dirs, databases, logs, agent keys
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        result: int = args.run(args)
        return result
    except KmaError as exc:
        print(f"kma: {exc.message}", file=sys.stderr)
        return 2
