"""`kma cluster add-kma|add-witness|kma-passphrase|raise-version`: a new KMA's entry and its one-time
KMA passphrase, and the cluster version, through a running KMA like the quorum commands (Security
Officer; quorum-protected).

The passphrase is printed once, for the installer of the new machine, who puts it in the answers
file of `kma init` with `mode = "join"`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kma.cli.quorum import CONNECTION_HELP, _connected, _talking, _when
from kma.cli.quorum import _credentials as read_credentials
from kma.datadir import DataDir


def _cluster_actions(sub: Any) -> Any:
    """The `kma cluster` subcommands: made here, or the ones `kma cluster status` made already."""
    parser = sub.choices.get("cluster")
    if parser is None:
        parser = sub.add_parser("cluster", help="the cluster of a running KMA", description=CONNECTION_HELP)
        return parser.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    # argparse keeps a parser's subcommands only as one of its actions
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def add_member_commands(sub: Any) -> None:
    actions = _cluster_actions(sub)
    p = _connected(
        actions.add_parser(
            "add-kma",
            help="create a new KMA's entry (quorum): prints its one-time KMA passphrase",
            description=CONNECTION_HELP,
        )
    )
    p.add_argument("kma_id", help="the new KMA's ID")
    p.add_argument("--site", required=True, help="the site the new KMA belongs to")
    p.add_argument("--name", help="its display name (default: its ID)")
    p.add_argument("--management-address", required=True, help="HOST:PORT managers reach it at")
    p.add_argument("--service-address", required=True, help="HOST:PORT agents reach it at")
    p.add_argument("--raft-address", required=True, help="HOST:PORT the other KMAs reach its Raft node at")
    p.add_argument("--non-voter", action="store_true", help="join as a read replica, not a Raft voter")
    p.add_argument("--key-pool-size", type=int, default=1000)
    _quorum_args(p)
    p.set_defaults(run=run_add_kma)
    p = _connected(
        actions.add_parser(
            "add-witness",
            help="create a witness's entry (quorum): a Raft voter with no key service, at a "
            "third site, so that two sites survive the loss of either; prints its one-time KMA passphrase",
            description=CONNECTION_HELP,
        )
    )
    p.add_argument("kma_id", help="the witness's ID")
    p.add_argument("--site", required=True, help="its site (a third one, e.g. 'witness')")
    p.add_argument("--name", help="its display name (default: its ID)")
    p.add_argument("--raft-address", required=True, help="HOST:PORT the KMAs reach its Raft node at")
    _quorum_args(p)
    p.set_defaults(run=run_add_witness)
    p = _connected(
        actions.add_parser(
            "kma-passphrase",
            help="a new one-time KMA passphrase for an entry (quorum); replaces a dead KMA",
            description=CONNECTION_HELP,
        )
    )
    p.add_argument("kma_id")
    _quorum_args(p)
    p.set_defaults(run=run_kma_passphrase)
    p = _connected(
        actions.add_parser(
            "raise-version",
            help="raise the cluster version (quorum) once every KMA runs a release that "
            "supports it (docs/upgrades.md)",
            description=CONNECTION_HELP,
        )
    )
    p.add_argument("version", type=int, help="the cluster version to raise to")
    _quorum_args(p)
    p.set_defaults(run=run_raise_version)


def _quorum_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--member", action="append", default=[], help="a key split member (repeat); prompts for each"
    )
    p.add_argument(
        "--credentials-file",
        type=Path,
        help="lines of 'MEMBER PASSPHRASE' (the passphrase is the rest of the line)",
    )


def _report_op(op: Any) -> None:
    if op.state == "executed":
        print(f"Done: {op.result}.")
    else:
        print(
            f"Pending quorum operation {op.id}: {op.summary}; {len(op.approvals)} of "
            f"{op.approvals_needed} approvals, expires {_when(op.expires_at)}."
        )
        print(f"Quorum Members approve it with: kma quorum approve {op.id} --member NAME ...")


def _report(done: Any) -> int:
    _report_op(done.op)
    print(f"One-time KMA passphrase (shown this once; works once the quorum approved): {done.kma_passphrase}")
    if done.voter_warning:
        print(f"WARNING: {done.voter_warning}")
    return 0


@_talking
def run_add_kma(args: argparse.Namespace, client: Any) -> int:
    done = client.add_kma(
        args.kma_id,
        args.site,
        name=args.name,
        management_address=args.management_address,
        service_address=args.service_address,
        raft_address=args.raft_address,
        voter=not args.non_voter,
        key_pool_size=args.key_pool_size,
        credentials=read_credentials(args),
    )
    return _report(done)


@_talking
def run_add_witness(args: argparse.Namespace, client: Any) -> int:
    done = client.add_kma(
        args.kma_id,
        args.site,
        name=args.name,
        raft_address=args.raft_address,
        witness=True,
        credentials=read_credentials(args),
    )
    return _report(done)


@_talking
def run_kma_passphrase(args: argparse.Namespace, client: Any) -> int:
    return _report(client.set_kma_passphrase(args.kma_id, credentials=read_credentials(args)))


def run_join(data_dir: DataDir, answers_text: str) -> int:
    """`kma init` with `mode = "join"` (kma/setup/join.py)."""
    from kma.setup.join import parse_join_answers
    from kma.setup.service import run_mode

    grant = run_mode(data_dir, "join", parse_join_answers(answers_text)).outcome
    entry = grant.kma
    role = (
        "a witness (a voter with no key service)"
        if entry.get("witness")
        else ("a voter" if entry["voter"] else "a non-voter (read replica)")
    )
    print(
        f"Joined cluster '{grant.cluster_name}' as KMA '{entry['id']}' at site '{entry['site_id']}', "
        f"{role}, in {data_dir.root}"
    )
    print(f"CA fingerprint {grant.ca_fingerprint}")
    members = ", ".join(m.raft_address for m in grant.members) or "none yet"
    print(f"Raft members to join: {members}")
    if entry.get("witness"):
        print("Run it with kma serve: it runs only its Raft node (no listeners, no key service).")
    else:
        print("It starts LOCKED: once it runs (kma serve), a quorum unlocks it (kma unlock --kma ...).")
    print("The answers file holds the (now spent) KMA passphrase: destroy it.")
    return 0


@_talking
def run_raise_version(args: argparse.Namespace, client: Any) -> int:
    _report_op(client.raise_cluster_version(args.version, credentials=read_credentials(args)))
    return 0
