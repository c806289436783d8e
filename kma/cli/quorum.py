"""`kma quorum list|show|approve|enrol|delete`, `kma lock`, `kma unlock`: talk to a running KMA.

These go through `kms_client` over the management API like any other client, never the data
directory's database: a locked KMA must be unlocked through the KMA process that holds its vault.
The cluster CA is pinned, from `--data-dir DIR` (its tls/ca.pem) or `--ca-fingerprint`; without
either the command refuses rather than trusting whatever answers. Passphrases are read from a
prompt (not echoed) or from files, never from the command line where `ps` would show them.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kma.datadir import DataDir
from kma.errors import ValidationFailed

CONNECTION_HELP = "connection: --kma HOST:PORT (or --data-dir), --user ID, and --data-dir or --ca-fingerprint"


def add_quorum_commands(sub: Any) -> None:
    q = sub.add_parser(
        "quorum", help="pending quorum operations on a running KMA", description=CONNECTION_HELP
    )
    q_sub = q.add_subparsers(dest="quorum_command", required=True, metavar="ACTION")
    p = _connected(q_sub.add_parser("list", help="list quorum operations (newest first)"))
    p.add_argument("--state", choices=("pending", "executed", "expired", "deleted", "failed"))
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_list)
    p = _connected(q_sub.add_parser("show", help="one quorum operation: what it will change, who approved"))
    p.add_argument("op_id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_show)
    p = _connected(q_sub.add_parser("approve", help="approve as one key split member"))
    p.add_argument("op_id")
    p.add_argument("--member", required=True, help="the key split member's name")
    p.add_argument("--member-passphrase-file", type=Path, help="read the member's passphrase from this file")
    p.set_defaults(run=run_approve)
    p = _reaching(
        q_sub.add_parser(
            "enrol", help="as a new key split member, set your own passphrase for a pending key split change"
        )
    )
    p.add_argument("op_id")
    p.add_argument("--member", required=True, help="your name as a new key split member")
    p.add_argument("--code-file", type=Path, help="read your one-time enrolment code from this file")
    p.add_argument("--member-passphrase-file", type=Path, help="read your new passphrase from this file")
    p.set_defaults(run=run_enrol)
    p = _connected(q_sub.add_parser("delete", help="delete a pending operation (Security Officer)"))
    p.add_argument("op_id")
    p.set_defaults(run=run_delete)

    p = _connected(
        sub.add_parser("lock", help="lock a running KMA (Security Officer)", description=CONNECTION_HELP)
    )
    p.add_argument("--kma-id", help="default: the KMA at --kma")
    p.set_defaults(run=run_lock)
    p = _connected(
        sub.add_parser(
            "unlock", help="unlock a locked KMA with key split credentials", description=CONNECTION_HELP
        )
    )
    p.add_argument("--kma-id", help="default: the KMA at --kma")
    p.add_argument(
        "--member", action="append", default=[], help="a key split member (repeat); prompts for each"
    )
    p.add_argument(
        "--credentials-file",
        type=Path,
        help="lines of 'MEMBER PASSPHRASE' (the passphrase is the rest of the line)",
    )
    p.set_defaults(run=run_unlock)


def _connected(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    _reaching(p)
    p.add_argument("--user", required=True, help="your user ID")
    p.add_argument("--passphrase-file", type=Path, help="read your sign-in passphrase from this file")
    p.add_argument(
        "--sign-in-code-file",
        type=Path,
        help="read your two-step sign-in code (or a recovery code) from this file; asked when needed",
    )
    return p


def _reaching(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Which KMA, and the CA to pin; no sign-in (a new key split member need not be a user)."""
    p.add_argument("--kma", help="the KMA's management address HOST:PORT")
    p.add_argument("--data-dir", help="the KMA's data directory: its CA is pinned from tls/ca.pem")
    p.add_argument("--ca-fingerprint", help="the cluster CA fingerprint (SHA256:...) to pin")
    return p


# --- plumbing ----------------------------------------------------------------------------
def _secret(path: Path | None, prompt: str) -> str:
    if path is None:
        return getpass.getpass(prompt)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationFailed(f"Cannot read {path}: {exc}.") from None
    return text.splitlines()[0] if text else ""


def _client(args: argparse.Namespace) -> Any:
    from kms_client import SecondFactorRequired

    client = _pinned_client(args)
    passphrase = _secret(args.passphrase_file, f"Passphrase of user {args.user}: ")
    code = _secret(args.sign_in_code_file, "") if args.sign_in_code_file else None
    try:
        client.sign_in(args.user, passphrase, code)
    except SecondFactorRequired:  # two-step sign-in is on for this user: the code, as typed now
        client.sign_in(args.user, passphrase, _secret(None, "Code from your authenticator app: "))
    return client


def _pinned_client(args: argparse.Namespace) -> Any:
    from kms_client import KmsClient, Trust

    address, ca_pem = args.kma, None
    if args.data_dir:
        data_dir = DataDir(Path(args.data_dir).expanduser().resolve())
        try:
            ca_pem = data_dir.ca_cert.read_text(encoding="ascii")
        except OSError as exc:
            raise ValidationFailed(f"Cannot read the cluster CA in {data_dir.root}: {exc}.") from None
        if address is None and data_dir.identity_file.exists():
            address = data_dir.identity().management_address
    if address is None:
        raise ValidationFailed("Say which KMA: --kma HOST:PORT (or --data-dir of a KMA).")
    if ca_pem is None and not args.ca_fingerprint:
        raise ValidationFailed("Pin the cluster CA: --data-dir DIR or --ca-fingerprint SHA256:...")
    pin = args.ca_fingerprint or Trust.from_pem(ca_pem or "").fingerprint
    return KmsClient(address, ca_pem=ca_pem, ca_fingerprint=pin)


def _talking(run: Callable[[argparse.Namespace, Any], int]) -> Callable[[argparse.Namespace], int]:
    """Connect, run, sign out; a client-side failure is one plain line and exit status 2."""

    def wrapped(args: argparse.Namespace) -> int:
        from kms_client import KmsError

        try:
            client = _client(args)
            try:
                return run(args, client)
            finally:
                client.sign_out()
                client.close()
        except KmsError as exc:
            print(f"kma: {exc}", file=sys.stderr)
            return 2

    return wrapped


def _when(moment: Any) -> str:
    return str(moment.strftime("%Y-%m-%d %H:%M:%SZ"))


def _describe(op: Any) -> list[str]:
    approvals = ", ".join(
        f"{a.member} (entered by {a.approved_by}, {_when(a.approved_at)})" for a in op.approvals
    )
    lines = [
        f"Quorum operation {op.id}: {op.summary}",
        f"  type       {op.type}",
        f"  state      {op.state}" + (f" ({op.result})" if op.result else ""),
        f"  requested  by {op.requested_by} at {_when(op.submitted_at)}",
        f"  expires    {_when(op.expires_at)}",
        f"  approvals  {len(op.approvals)} of {op.approvals_needed}"
        + (f": {approvals}" if approvals else ""),
        f"  request    {json.dumps(dict(op.request), sort_keys=True)}",
    ]
    return lines


def _as_json(op: Any) -> dict[str, Any]:
    return {
        "id": op.id,
        "type": op.type,
        "summary": op.summary,
        "request": dict(op.request),
        "requested_by": op.requested_by,
        "submitted_at": _when(op.submitted_at),
        "expires_at": _when(op.expires_at),
        "state": op.state,
        "approvals_needed": op.approvals_needed,
        "approvals": [a.member for a in op.approvals],
        "result": op.result,
    }


def _report(result: Any, done: str) -> int:
    from kms_client import PendingQuorumOp

    if isinstance(result, PendingQuorumOp):
        print(
            f"Pending quorum operation {result.id}: {result.summary}; "
            f"{len(result.approvals)} of {result.approvals_needed} approvals, "
            f"expires {_when(result.expires_at)}."
        )
        print(f"Quorum Members approve it with: kma quorum approve {result.id} --member NAME ...")
        return 0
    print(done)
    return 0


# --- commands ----------------------------------------------------------------------------
@_talking
def run_list(args: argparse.Namespace, client: Any) -> int:
    ops = list(client.iter_quorum_operations(state=args.state))
    if args.json:
        print(json.dumps([_as_json(op) for op in ops], indent=2))
        return 0
    if not ops:
        print("No quorum operations.")
    for op in ops:
        print(
            f"{op.id}  {op.state:<8}  {len(op.approvals)}/{op.approvals_needed}  "
            f"expires {_when(op.expires_at)}  {op.summary}"
        )
    return 0


@_talking
def run_show(args: argparse.Namespace, client: Any) -> int:
    op = client.get_quorum_operation(args.op_id)
    print(json.dumps(_as_json(op), indent=2) if args.json else "\n".join(_describe(op)))
    return 0


@_talking
def run_approve(args: argparse.Namespace, client: Any) -> int:
    passphrase = _secret(args.member_passphrase_file, f"Key split passphrase of member {args.member}: ")
    op = client.approve_quorum_operation(args.op_id, args.member, passphrase)
    print(
        f"Approved as {args.member}: {len(op.approvals)} of {op.approvals_needed} approvals; "
        f"the operation is {op.state}" + (f" ({op.result})." if op.result else ".")
    )
    return 0 if op.state in ("pending", "executed") else 1


def run_enrol(args: argparse.Namespace) -> int:
    """The new member's own call: their code proves who they are; nobody else types the passphrase."""
    from kms_client import KmsError

    try:
        with _pinned_client(args) as client:
            code = _secret(args.code_file, f"One-time enrolment code of {args.member}: ")
            passphrase = _secret(args.member_passphrase_file, f"New key split passphrase of {args.member}: ")
            if args.member_passphrase_file is None and passphrase != getpass.getpass("Again: "):
                raise ValidationFailed("The two passphrases differ; nothing was set.")
            op = client.enrol_key_split_member(args.op_id, args.member, code, passphrase)
    except KmsError as exc:
        print(f"kma: {exc}", file=sys.stderr)
        return 2
    waiting = ", ".join(op.awaiting_enrolment) or "nobody"
    print(
        f"Passphrase set for key split member {args.member}. The key split change is {op.state}; "
        f"new members still to enrol: {waiting}; approvals {len(op.approvals)} of {op.approvals_needed}."
    )
    return 0


@_talking
def run_delete(args: argparse.Namespace, client: Any) -> int:
    client.delete_quorum_operation(args.op_id)
    print(f"Deleted quorum operation {args.op_id}; it will never run.")
    return 0


@_talking
def run_lock(args: argparse.Namespace, client: Any) -> int:
    kma_id = args.kma_id or client.get_status().kma_id
    client.lock_kma(kma_id)
    print(f"KMA {kma_id} is locked: it serves no keys until a quorum unlocks it (kma unlock).")
    return 0


def _credentials(args: argparse.Namespace) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    if args.credentials_file is not None:
        try:
            lines = args.credentials_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationFailed(f"Cannot read {args.credentials_file}: {exc}.") from None
        for line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                name, _, passphrase = line.strip().partition(" ")
                pairs.append((name, passphrase.strip()))
    for member in args.member:
        pairs.append((member, getpass.getpass(f"Key split passphrase of member {member}: ")))
    return pairs


@_talking
def run_unlock(args: argparse.Namespace, client: Any) -> int:
    kma_id = args.kma_id or client.get_status().kma_id
    result = client.unlock_kma(kma_id, credentials=_credentials(args))
    return _report(result, f"KMA {kma_id} is unlocked.")
