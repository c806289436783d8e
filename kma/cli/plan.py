"""`kma plan`: drive settings, drives, cartridges and KMAs for an encrypted tape deployment.

Needs no KMA: it answers from the white paper's measurements shipped in ``tape_planning``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_plan(sub: Any) -> None:
    p = sub.add_parser(
        "plan",
        help="plan an encrypted tape deployment from the white paper's drive measurements",
        description="Buffer settings, NetBackup touch files, encryption overhead, drives, cartridges "
        "and KMAs per site for a backup, answered only from measured figures.",
    )
    p.add_argument("--drive", required=True, help="T10000, T9840D, LTO4 or T10000B")
    p.add_argument("--data", required=True, help="data to back up in the window, e.g. 20TB")
    p.add_argument("--window", required=True, help="backup window, e.g. 8h or 90min")
    p.add_argument("--compressibility", required=True, help="N:1, e.g. 1:1, 2:1 or 10:1")
    p.add_argument("--file-size", required=True, help="typical file size, e.g. 1GB or 256KB")
    p.add_argument(
        "--mixed-256k",
        action="store_true",
        help="the library also has drives limited to 256 KB blocks (e.g. 9x40)",
    )
    p.add_argument(
        "--streams",
        default="1",
        metavar="N",
        help="concurrent backup streams multiplexed onto each drive (default 1)",
    )
    p.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    p.set_defaults(run=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    from tape_planning import PlanError, PlanRequest, make_plan
    from tape_planning.report import plan_text

    request = PlanRequest(
        args.drive,
        args.data,
        args.window,
        args.compressibility,
        args.file_size,
        args.mixed_256k,
        args.streams,
    )
    try:
        plan = make_plan(request)
    except PlanError as exc:
        print(f"kma plan: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2))
    else:
        sys.stdout.write(plan_text(plan))
    return 0
