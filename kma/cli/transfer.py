"""`kma transfer identity|partners|register|enable|disable|remove|export|preview|import`: transfer
partners and transfer files through a running KMA's API, as the manager's Transfer partners page
does (docs/transfer.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kma.cli.quorum import CONNECTION_HELP, _connected, _credentials, _talking, _when
from kma.errors import Conflict, ValidationFailed


def add_transfer(sub: Any) -> None:
    t = sub.add_parser(
        "transfer", help="transfer partners and transfer files of a running KMA", description=CONNECTION_HELP
    )
    t_sub = t.add_subparsers(dest="transfer_command", required=True, metavar="ACTION")
    _connected(
        t_sub.add_parser("identity", help="this cluster's identity line and fingerprint")
    ).set_defaults(run=run_identity)
    _connected(t_sub.add_parser("partners", help="the registered transfer partners")).set_defaults(
        run=run_partners
    )
    p = _connected(
        t_sub.add_parser("register", help="register a partner (a quorum operation; Security Officer)")
    )
    p.add_argument("partner_id")
    p.add_argument("--name", required=True)
    p.add_argument("--contact", default="")
    p.add_argument(
        "--identity", required=True, help="the partner's identity line (kms-transfer-identity-v1:...)"
    )
    p.add_argument("--fingerprint", required=True, help="the fingerprint the partner read to you out of band")
    p.add_argument("--send-only", action="store_true", help="keys go to it; nothing is imported from it")
    p.add_argument("--receive-only", action="store_true", help="its files are imported; nothing goes to it")
    p.add_argument(
        "--member", action="append", default=[], help="a key split member (repeat); prompts for each"
    )
    p.add_argument("--credentials-file", type=Path, help="lines of 'MEMBER PASSPHRASE'")
    p.set_defaults(run=run_register)
    for action, what in (("enable", "enable"), ("disable", "disable"), ("remove", "remove")):
        p = _connected(t_sub.add_parser(action, help=f"{what} a partner (Security Officer)"))
        p.add_argument("partner_id")
        p.set_defaults(run=run_partner_change, action=action)
    p = _connected(t_sub.add_parser("export", help="write a transfer file for a partner (Operator)"))
    p.add_argument("partner_id")
    p.add_argument("--out", required=True, type=Path, help="where to save the transfer file")
    p.add_argument("--volser", action="append", default=[], help="a volser (repeat)")
    p.add_argument("--from-volser", help="the first volser of a range")
    p.add_argument("--to-volser", help="the last volser of a range")
    p.add_argument("--key-group", help="every data unit of this key group")
    p.add_argument("--valid-days", type=int, default=30, help="how long the partner may import it (1-365)")
    p.set_defaults(run=run_export)
    for action, help_text in (("preview", "what importing a file would do"), ("import", "import a file")):
        p = _connected(t_sub.add_parser(action, help=f"{help_text} (Security Officer)"))
        p.add_argument("file", type=Path)
        if action == "import":
            p.add_argument("--key-group", required=True, help="a key group whose policy allows import")
            p.add_argument(
                "--member",
                action="append",
                default=[],
                help="a key split member (repeat; prompts for each), when the key group's policy puts "
                "imports under quorum",
            )
            p.add_argument("--credentials-file", type=Path, help="lines of 'MEMBER PASSPHRASE'")
        p.set_defaults(run=run_import, action=action)
    p = _connected(
        t_sub.add_parser("resume", help="finish an import job its KMA stopped halfway (Security Officer)")
    )
    p.add_argument("job_id", help="the interrupted job (its import said which)")
    p.set_defaults(run=run_resume, action="import")


def _followed(client: Any, job: Any) -> Any:
    """The job run to its end, its progress printed as it changes."""
    shown: list[tuple[str, int, int]] = []

    def progress(j: Any) -> None:
        now = (j.phase, j.done, j.total)
        if j.state == "running" and j.total and (not shown or shown[-1] != now):
            shown.append(now)
            print(f"  {j.phase}: {j.done:,} of {j.total:,} data units", flush=True)

    return client.follow_transfer_job(job, progress)


@_talking
def run_identity(args: argparse.Namespace, client: Any) -> int:
    identity = client.get_transfer_identity()
    print(identity.identity)
    print(f"Fingerprint: {identity.fingerprint}")
    return 0


@_talking
def run_partners(args: argparse.Namespace, client: Any) -> int:
    from kms_client.paging import iter_all

    for p in iter_all(client.list_transfer_partners):
        state = "enabled" if p.enabled else "DISABLED"
        directions = "/".join(w for w, on in (("sends", p.may_send), ("receives", p.may_receive)) if on)
        print(f"{p.id:<20} {state:<9} {directions:<15} {p.fingerprint}  {p.name}")
    return 0


@_talking
def run_register(args: argparse.Namespace, client: Any) -> int:
    if args.send_only and args.receive_only:
        raise ValidationFailed("Choose --send-only or --receive-only, not both.")
    done = client.register_transfer_partner(
        args.partner_id,
        args.name,
        args.identity,
        fingerprint=args.fingerprint,
        contact=args.contact,
        may_send=not args.send_only,
        may_receive=not args.receive_only,
        credentials=_credentials(args),
    )
    from kms_client import PendingQuorumOp

    if isinstance(done, PendingQuorumOp):
        print(f"Pending quorum operation {done.id}: {done.summary}")
        return 0
    print(f"Registered transfer partner {done.id}, fingerprint {done.fingerprint}")
    return 0


@_talking
def run_partner_change(args: argparse.Namespace, client: Any) -> int:
    if args.action == "remove":
        client.remove_transfer_partner(args.partner_id)
        print(f"Removed transfer partner {args.partner_id}")
        return 0
    partner = getattr(client, f"{args.action}_transfer_partner")(args.partner_id)
    print(f"Transfer partner {partner.id} is {'enabled' if partner.enabled else 'disabled'}")
    return 0


@_talking
def run_export(args: argparse.Namespace, client: Any) -> int:
    if args.out.exists():
        raise Conflict(f"{args.out} already exists; choose a new file name.")
    job = client.start_transfer_export(
        args.partner_id,
        volsers=args.volser,
        volser_from=args.from_volser,
        volser_to=args.to_volser,
        key_group_id=args.key_group,
        valid_days=args.valid_days,
    )
    done = _followed(client, job).exported
    client.get_transfer_job_file(job.id, args.out)
    print(
        f"Transfer file {done.file_id}: {done.data_units} data units, {done.keys} keys, saved to {args.out}"
    )
    print(
        f"For partner {done.partner_id} ({done.recipient_fingerprint}); valid until {_when(done.expires_at)}"
    )
    for left in done.not_exported:
        print(f"NOT EXPORTED {left.data_unit_id} key {left.key_id}: {left.reason}")
    for volser in done.not_found:
        print(f"NOT FOUND {volser}")
    return 0


@_talking
def run_import(args: argparse.Namespace, client: Any) -> int:
    try:  # sent as it is read (the file goes up as its own request, never held whole)
        upload = client.upload_transfer_file(args.file)
    except OSError as exc:
        raise ValidationFailed(f"Cannot read {args.file}: {exc}.") from None
    if args.action == "preview":
        done = client.preview_transfer_import(upload.id)
    else:
        started = client.start_transfer_import(upload.id, args.key_group, credentials=_credentials(args))
        print(f"Transfer job {started.id}", flush=True)  # what `kma transfer resume` takes, if need be
        return _import_end(args, _followed(client, started))
    return _print_import(args, done)


@_talking
def run_resume(args: argparse.Namespace, client: Any) -> int:
    return _import_end(args, _followed(client, client.resume_transfer_job(args.job_id)))


def _import_end(args: argparse.Namespace, job: Any) -> int:
    if job.pending_op is not None:
        op = job.pending_op
        print(f"Submitted for approval: quorum operation {op.id} ({op.approvals_needed} approvals needed)")
        print(f"  {op.summary}")
        return 0
    return _print_import(args, job.imported)


def _print_import(args: argparse.Namespace, done: Any) -> int:
    print(f"Transfer file {done.file_id} from partner {done.partner_id} ({done.partner_name})")
    print(
        f"  {done.data_units} data units, {done.keys} keys: {done.new} new, {done.already_here} here already"
    )
    for conflict in done.conflicts:
        print(f"  CONFLICT {conflict.data_unit_id}: {conflict.reason}")
    if args.action == "import":
        print(f"Imported {done.imported} data units into key group {done.key_group_id}")
        if done.keys_awaiting_backup:
            print(
                f"{done.keys_awaiting_backup} imported keys are sent to drives once a database backup of "
                "this KMA holds them: kma backup create"
            )
    return 0
