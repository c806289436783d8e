"""`kma backup create|list|core`: database backups and the core security backup, through a running
KMA's API like the quorum commands (the KMA holding the master key makes them). Restoring is
`kma init --answers F` with `mode = "restore"` (README)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kma.cli.quorum import CONNECTION_HELP, _connected, _talking, _when
from kma.errors import Conflict


def add_backup(sub: Any) -> None:
    b = sub.add_parser(
        "backup",
        help="database backups and the core security backup of a running KMA",
        description=CONNECTION_HELP,
    )
    b_sub = b.add_subparsers(dest="backup_command", required=True, metavar="ACTION")
    p = _connected(b_sub.add_parser("create", help="make a database backup and save it (Backup Operator)"))
    p.add_argument("--out", required=True, type=Path, help="where to save the backup file")
    p.set_defaults(run=run_create)
    p = _connected(b_sub.add_parser("list", help="the backups the cluster holds"))
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_list)
    p = _connected(b_sub.add_parser("core", help="take the core security backup, save it (Security Officer)"))
    p.add_argument("--out", required=True, type=Path, help="where to save it; keep it offline")
    p.set_defaults(run=run_core)


def _refuse_existing(path: Path) -> None:
    if path.exists():
        raise Conflict(f"{path} already exists; choose a new file name.")


@_talking
def run_create(args: argparse.Namespace, client: Any) -> int:
    _refuse_existing(args.out)
    backup = client.create_backup()
    size = client.download_backup(backup.id, args.out)
    print(
        f"Database backup {backup.id}: {backup.keys} keys, {backup.audit_events} audit events, "
        f"{size} bytes, saved to {args.out}"
    )
    print(f"SHA-256 {backup.sha256}")
    status = client.core_security_backup_status()
    if not status.up_to_date:
        print(f"WARNING: {status.message}", file=sys.stderr)
    return 0


@_talking
def run_list(args: argparse.Namespace, client: Any) -> int:
    listing = client.list_backups()
    status = listing.core_security_backup
    if args.json:
        items = [{**b.__dict__, "created_at": _when(b.created_at), "deleted_at": None} for b in listing.items]
        core = {"exists": status.exists, "up_to_date": status.up_to_date, "message": status.message}
        print(json.dumps({"items": items, "core_security_backup": core}, indent=2))
        return 0
    if not listing.items:
        print("No database backups.")
    for b in listing.items:
        print(
            f"{b.id}  {_when(b.created_at)}  by {b.created_by:<12} {b.size:>12} bytes  {b.keys} keys  "
            f"{b.audit_events} events  KMA {b.kma_id}{'  (scheduled)' if b.scheduled else ''}"
        )
    when = f" (taken {_when(status.created_at)} by {status.created_by})" if status.created_at else ""
    print(f"Core security backup{when}: {status.message}")
    return 0


@_talking
def run_core(args: argparse.Namespace, client: Any) -> int:
    _refuse_existing(args.out)
    size = client.take_core_security_backup(args.out)
    print(
        f"Core security backup saved to {args.out} ({size} bytes). Keep it offline: with a quorum of "
        "the key split's passphrases it opens every database backup this cluster takes until its key split "
        "changes."
    )
    return 0
