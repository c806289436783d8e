"""`kma upgrade check [--json]`: whether the cluster is ready for a rolling upgrade, through a
running KMA's API (GET /cluster/upgrade-check, a Security Officer's). Exit status 0 when every
check passed, 1 when one failed (each named with what to do), 2 when the KMA could not be asked.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from kma.cli.quorum import CONNECTION_HELP, _connected, _talking


def add_upgrade_commands(sub: Any) -> None:
    u = sub.add_parser("upgrade", help="checks before a rolling upgrade", description=CONNECTION_HELP)
    u_sub = u.add_subparsers(dest="upgrade_command", required=True, metavar="ACTION")
    p = _connected(
        u_sub.add_parser(
            "check", help="every KMA responding with no pending outbox, a recent database backup, the order"
        )
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_check)


def step_line(n: int, step: Any) -> str:
    kind = "witness" if step.witness else "leader" if step.leader else "KMA"
    last = "; the KMA answering this check: upgrade it last" if step.this_kma else ""
    return f"  {n}. {step.id:<12} {step.name:<20} {step.site_id:<10} {kind:<8} {step.versions_text}{last}"


@_talking
def run_check(args: argparse.Namespace, client: Any) -> int:
    answer = client.get_upgrade_check()
    if args.json:
        print(json.dumps(dataclasses.asdict(answer), indent=2, default=str))
        return 0 if answer.ready else 1
    failed = [c for c in answer.checks if not c.ok]
    for check in answer.checks:
        print(f"{'ok  ' if check.ok else 'FAIL'} {check.message}")
        if not check.ok:
            print(f"     {check.todo}")
    print(
        "\nUpgrade the KMAs one at a time, in this order (stop, install, start, wait until it is caught "
        "up, check again):"
    )
    for n, step in enumerate(answer.order, 1):
        print(step_line(n, step))
    if failed:
        print(f"\nNot ready: {len(failed)} check{'s' if len(failed) != 1 else ''} failed.")
        return 1
    print("\nReady: every check passed.")
    return 0
