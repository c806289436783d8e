"""`kma plan`: the backup data path stage by stage, and for the drives the KMS white paper measured,
drive settings, drives, cartridges and KMAs for an encrypted tape deployment.

Needs no KMA: it answers from the papers' figures shipped in ``tape_planning``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

FILE_SIZE_OF_MIX = {"small": "32KB", "typical": "1MB", "large": "1GB"}  # the measured rows nearest each mix


def add_plan(sub: Any) -> None:
    p = sub.add_parser(
        "plan",
        help="why a backup runs at its rate: the data path stage by stage, with the bottleneck",
        description="The backup data path (disk, file system, network, server, application, drives) with "
        "each stage's rate and source, the bottleneck and what to change first; for the four drives the "
        "KMS white paper measured, also buffer settings, cartridges and KMAs per site.",
    )
    p.add_argument(
        "--drive", required=True, help="e.g. LTO8, LTO9, TS1160, T10000D, T10000, LTO4, ULTRIUM960"
    )
    p.add_argument("--drives", default="1", metavar="N", help="drives written at once (default 1)")
    p.add_argument("--data", required=True, help="data to back up in the window, e.g. 20TB")
    p.add_argument("--window", required=True, help="backup window, e.g. 8h or 90min")
    p.add_argument(
        "--data-type", default="typical", help="typical (80/20 mix), database, media, incompressible, or N:1"
    )
    p.add_argument("--files", default="typical", help="large, typical or small (millions of small files)")
    p.add_argument("--system", default="windows", help="windows or unix (small-file rates differ)")
    p.add_argument("--disk", default="array", help="array, single, busy or measured")
    p.add_argument(
        "--disk-rate", default="400", metavar="MB/S", help="the array's rated or the measured read rate"
    )
    p.add_argument("--network", default="none", help="none, 100mb, gige, 10gige or san")
    p.add_argument("--san-gbit", default="8", metavar="GB", help="Fibre Channel speed with --network san")
    p.add_argument("--lan-free", action="store_true", help="LAN-free backup over the SAN")
    p.add_argument("--application", default="generic", help="generic, netbackup, tsm or dataprotector")
    p.add_argument("--concurrency", default="1", metavar="N", help="streams read at once (default 1)")
    p.add_argument("--software-compression", action="store_true", help="the backup application compresses")
    p.add_argument("--crc", action="store_true", help="CRC checking on (Data Protector)")
    p.add_argument("--bus-rate", default="", metavar="MB/S", help="the backup server's bus bandwidth")
    p.add_argument("--measured-rate", default="", metavar="MB/S", help="what the backup runs at today")
    p.add_argument("--archive-object-size", default="", help="also plan an archive path (DR550), e.g. 1MB")
    p.add_argument("--archive-per-transaction", type=int, default=500, help="objects a transaction")
    p.add_argument("--archive-objects", type=int, default=1_000_000, help="objects to archive")
    p.add_argument(
        "--compressibility", default="", help="N:1 for the measured-drive plan (default: data type)"
    )
    p.add_argument("--file-size", default="", help="typical file size for the measured-drive plan, e.g. 1GB")
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
    from dataclasses import asdict

    from tape_planning import PlanError, PlanRequest, make_plan
    from tape_planning.archive import archive_lines
    from tape_planning.measurements import DRIVES, drive_named
    from tape_planning.path import PathRequest, make_path
    from tape_planning.path_report import path_text, stage_rows
    from tape_planning.report import plan_text

    try:
        path = make_path(path_request(args, PathRequest))
        out: dict[str, Any] = {}
        text = path_text(path)
        if path.drive.drive in DRIVES:
            ratio = args.compressibility or f"{path.compression.ratio:.2f}:1"
            file_size = args.file_size or FILE_SIZE_OF_MIX[path.request.files]
            plan = make_plan(
                PlanRequest(
                    drive_named(args.drive),
                    args.data,
                    args.window,
                    ratio,
                    file_size,
                    args.mixed_256k,
                    args.streams,
                )
            )
            out = plan.to_dict()
            text = plan_text(plan) + "\n" + text
        if args.archive_object_size:
            lines = archive_lines(
                args.archive_object_size, args.archive_per_transaction, args.archive_objects
            )
            text += "\nArchive path (paper 004)\n" + "".join(f"  {line}\n" for line in lines)
            out["archive"] = lines
    except PlanError as exc:
        print(f"kma plan: {exc}", file=sys.stderr)
        return 2
    if args.json:
        out["path"] = {
            "stages": [
                dict(zip(("stage", "mb_per_s", "bottleneck", "source", "how"), r, strict=True))
                for r in stage_rows(path)
            ],
            "bottleneck": asdict(path.bottleneck),
            "mb_per_s": path.rate,
            "hours": path.hours,
        }
        print(json.dumps(out, indent=2))
    else:
        sys.stdout.write(text)
    return 0


def path_request(args: argparse.Namespace, request: Any) -> Any:
    return request(
        drive=args.drive,
        drives=args.drives,
        data=args.data,
        window=args.window,
        data_type=args.compressibility or args.data_type,
        files=args.files,
        system=args.system,
        disk=args.disk,
        disk_mb_s=args.disk_rate,
        network=args.network,
        san_gbit=args.san_gbit,
        lan_free=args.lan_free,
        application=args.application,
        concurrency=args.concurrency,
        software_compression=args.software_compression,
        crc=args.crc,
        bus_mb_s=args.bus_rate,
        measured_mb_s=args.measured_rate,
    )
