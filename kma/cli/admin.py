"""`kma init`, `kma status`, `kma audit verify`, `kma demo`: commands on a data directory."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kma.datadir import DataDir
from kma.errors import Conflict, NotFound, ValidationFailed

Sub = "argparse._SubParsersAction[argparse.ArgumentParser]"


def open_data_dir(args: argparse.Namespace, must_exist: bool = True) -> DataDir:
    data_dir = DataDir(Path(args.data_dir).expanduser().resolve())
    if must_exist and not data_dir.is_initialised():
        raise NotFound(f"{data_dir.root} holds no KMA; run `kma init` or `kma demo` first.")
    return data_dir


def add_init(sub: Any) -> None:
    p = sub.add_parser("init", help="first set-up of a new KMA: from a TOML answers file, or asked here")
    p.add_argument("--data-dir", required=True)
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument(
        "--answers",
        type=Path,
        help="TOML answers file (see README); - reads them from standard input. Passphrases "
        "left out of the file are asked for here, each typed twice and not shown",
    )
    how.add_argument(
        "--interactive",
        action="store_true",
        help="ask the set-up questions in this terminal (passphrases not shown)",
    )
    p.set_defaults(run=run_init)


def run_init(args: argparse.Namespace) -> int:
    import getpass

    from kma.cli.membership import run_join
    from kma.cli.setup_questions import ask_answers, ask_missing_passphrases, missing_passphrases
    from kma.crypto import fingerprint
    from kma.setup.answers import answers_text, check_answers, read_answers
    from kma.setup.service import answers_mode, run_answers

    data_dir = open_data_dir(args, must_exist=False)
    if data_dir.is_initialised():
        raise Conflict(f"{data_dir.root} already holds a KMA; choose an empty directory.")
    split = None
    if args.interactive:
        answers, split = ask_answers(input, getpass.getpass, print)
    else:
        # From standard input, the answers (which hold passphrases) need no file the KMA's own user
        # can read: root pipes them in (`... | runuser -u kma -- kma init --answers -`).
        from_stdin = str(args.answers) == "-"
        text = sys.stdin.read() if from_stdin else answers_text(args.answers)
        if answers_mode(text) == "restore":  # a restore's answers have their own tables
            return _run_restore(data_dir, text, Path.cwd() if from_stdin else args.answers.parent)
        if answers_mode(text) == "join":  # a new KMA of an existing cluster
            return run_join(data_dir, text)
        answers = read_answers(text)
        if missing_passphrases(answers):
            if from_stdin or not sys.stdin.isatty():
                raise ValidationFailed(
                    "The answers leave out passphrases. Run `kma init --answers FILE` "
                    "in a terminal, where each person types their own."
                )
            answers = ask_missing_passphrases(answers, getpass.getpass, print)
        check_answers(answers)
    run_answers(data_dir, answers, split)
    print(f"Created cluster '{answers.cluster_name}' with KMA '{answers.kma_id}' in {data_dir.root}")
    print(
        f"Key split: {answers.threshold} of {len(answers.members)}; autonomous unlock "
        f"{'on' if answers.autonomous_unlock else 'off'}"
    )
    print(f"CA fingerprint {fingerprint(data_dir.ca_cert.read_bytes())}")
    if not args.interactive:
        print("The answers file holds passphrases: store it offline or destroy it now.")
    return 0


def _run_restore(data_dir: DataDir, text: str, base: Path) -> int:
    import tomllib

    from kma.setup.restore import read_restore_answers
    from kma.setup.service import run_mode

    restored = run_mode(data_dir, "restore", read_restore_answers(tomllib.loads(text), base)).outcome
    print(
        f"Restored KMA '{restored.kma_id}' of cluster '{restored.cluster_name}' in {data_dir.root} from "
        f"backup {restored.backup_id}: {restored.keys} keys, {restored.audit_events} audit events"
    )
    print(f"CA fingerprint {restored.ca_fingerprint} (the cluster's own: agents keep trusting it)")
    print(f"Master key: {restored.master_key}")
    print("The answers file holds passphrases: store it offline or destroy it now.")
    return 0


def add_status(sub: Any) -> None:
    p = sub.add_parser("status", help="this KMA's state, key counts and warnings")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_status)


def run_status(args: argparse.Namespace) -> int:
    from kma.appliance import Appliance
    from kma.cluster.rqlited import close_left_open
    from kma.cluster.store import open_store
    from kma.services.backups import describe_duration, readiness
    from kma.services.master_key import master_keys
    from kma.services.overview.dashboard import get_status, key_counts
    from kma.services.quorum.locking import unlock_autonomously

    data_dir = open_data_dir(args)
    close_left_open(data_dir.root)  # rqlited's own, left open by a KMA killed outright
    data_dir.check_private()
    kma = Appliance(data_dir, open_store)
    try:
        unlock_autonomously(kma)  # only to report whether it would; nothing is written
        info = asdict(get_status(kma))
        info.update(asdict(key_counts(kma)))
        info["backups"] = asdict(readiness(kma))
        info["autonomous_unlock_works"] = not kma.vault.locked
        rotation = master_keys.get_master_key(kma)
        info["master_key_rotation"] = asdict(rotation)
    finally:
        kma.close()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(
        f"Cluster {info['cluster_name']}: KMA {info['kma_id']} ({info['kma_name']}) at site {info['site_id']}"
    )
    print(f"Version {info['version']}; autonomous unlock {'on' if info['autonomous_unlock'] else 'off'}")
    print(f"Master key: {info['master_key']}; {master_keys.describe(rotation)}")
    exact = info["keys_by_state_exact"]
    print(
        "Keys: "
        + ", ".join(
            f"{state} {'' if exact[state] else 'more than '}{count}"
            for state, count in info["keys_by_state"].items()
        )
    )
    backup = info["backups"]
    age = backup["last_backup_age"]
    print("Last database backup: " + ("none" if age is None else f"{describe_duration(age)} ago"))
    if backup["one_kma"]:
        runs_out = backup["ready_keys_run_out_in"]
        rate = "no key issued in the last 7 days"
        if runs_out is not None:
            rate = f"at the recent issue rate the Ready keys run out in {describe_duration(runs_out)}"
        waiting = backup["keys_waiting_for_backup"]
        print(f"Ready keys {backup['ready_keys']}; waiting for a backup {waiting}; {rate}")
    for line in _certificate_lines(info["certificates"]):
        print(line)
    for warning in info["warnings"]:
        if not warning.startswith("This KMA is locked"):
            print(f"WARNING: {warning}")
    return 0


def _certificate_lines(found: list[dict[str, Any]]) -> list[str]:
    """One line per certificate: the CA's, each KMA's, and the agents' a warning reached."""
    from datetime import UTC, datetime

    from kma.services.backups import describe_duration

    lines = []
    for c in found:
        day = datetime.fromtimestamp(c["expires_at"], UTC).strftime("%Y-%m-%d %H:%M UTC")
        left = "EXPIRED" if c["expired"] else f"in {describe_duration(c['seconds_left'])}"
        mark = " (warning)" if c["warning"] and not c["expired"] else ""
        lines.append(f"Certificate {c['kind']:<8} {c['owner']:<20} expires {day}, {left}{mark}")
    return lines


def add_audit(sub: Any) -> None:
    p = sub.add_parser("audit", help="the audit trail")
    audit_sub = p.add_subparsers(dest="audit_command", required=True)
    v = audit_sub.add_parser(
        "verify",
        help="check the audit trail's hash chain, or an exported file offline",
        description="With --data-dir: verify this KMA's audit chain (from its latest signed checkpoint). "
        "With --export: check a signed export (CSV, or HTML report with its .sig) offline "
        "against the cluster CA (--ca, or --data-dir's); any changed byte fails.",
    )
    v.add_argument("--data-dir", help="the KMA's data directory (also gives the CA for --export)")
    v.add_argument("--export", type=Path, metavar="FILE", help="an exported CSV or HTML report")
    v.add_argument("--signature", type=Path, metavar="F", help="the detached signature (default FILE.sig)")
    v.add_argument("--ca", type=Path, metavar="CA_PEM", help="the cluster CA certificate to trust")
    v.set_defaults(run=run_audit_verify)


def run_audit_verify(args: argparse.Namespace) -> int:
    if args.export is not None:
        return _verify_export(args)
    if not args.data_dir:
        raise ValidationFailed("Give --data-dir DIR (this KMA's chain) or --export FILE (an exported file).")
    from kma.cluster.node_config import ClusterFiles
    from kma.services.audit.audit_verification import verify_connection

    data_dir = open_data_dir(args)
    files = ClusterFiles.of(data_dir.root)
    db = files.replica if files.exists() else data_dir.db  # a cluster node: its local replica
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30, isolation_level=None)  # never writes
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("BEGIN")  # one snapshot: heads and events agree
        report = verify_connection(conn, data_dir.ca_cert.read_bytes(), _progress_printer())
        if report.intact:
            start = "".join(
                f"; KMA {c.kma_id} from signed checkpoint #{c.id} (chain #{c.chain_seq})"
                for c in report.checkpoints
            )
            print(f"Audit trail intact: {report.events_checked} events verified{start}.")
            return 0 if _verify_rows(conn, data_dir) else 1
    finally:
        conn.close()
    where = f" (first bad event: #{report.first_bad_event_id})" if report.first_bad_event_id else ""
    print(f"Audit trail BROKEN{where}: {report.reason}", file=sys.stderr)
    return 1


def _progress_printer(every_s: float = 1.0) -> Callable[[int, int], None]:
    """Prints "1,200,000 of 10,000,000 events checked" on stderr, at most once per `every_s` (and
    at the first chunk, so a long verification says at once how much there is)."""
    last = [0.0]

    def progress(checked: int, total: int) -> None:
        now = time.monotonic()
        if last[0] and now - last[0] < every_s and checked < total:
            return
        last[0] = now
        print(f"{checked:,} of {total:,} events checked", file=sys.stderr, flush=True)

    return progress


def _verify_rows(conn: sqlite3.Connection, data_dir: DataDir) -> bool:
    """The MACs of the rows that grant power, with the master key autonomous unlock opens (as `kma
    status` does, writing nothing); without it, the tamper events the running KMA recorded. And the
    signatures of the KMA entries, with the cluster CA's certificate."""
    from kma.crypto import WrappingKey
    from kma.crypto.entry_signature import tampered_entries
    from kma.services.integrity.key_macs import tampered_keys
    from kma.services.integrity.row_macs import recorded_tamper, sealed_tables, tampered_rows
    from kma.vault import row_mac_key

    kma_id = data_dir.identity().kma_id
    recorded = recorded_tamper(conn)
    blob = conn.execute("SELECT autounlock_master FROM kmas WHERE id = ?", (kma_id,)).fetchone()
    if blob is None or blob[0] is None or not data_dir.unlock_key.exists():
        print(
            "Row MACs not checked here: autonomous unlock is off, so the master key is not at hand; "
            "a KMA checks them at each unlock and on use."
        )
        bad: list[str] = []
    else:
        local = WrappingKey(data_dir.unlock_key.read_bytes())
        master = WrappingKey(local.unwrap(f"autounlock:{kma_id}", blob[0]))
        bad = tampered_rows(conn, row_mac_key(master), sealed_tables(data_dir.rows_sealed))
        bad += tampered_keys(conn, row_mac_key(master), data_dir.keys_sealed.exists())
        for row in bad:
            print(f"TAMPERED row: {row}; it grants nothing", file=sys.stderr)
        if not bad:
            print(
                "Rows that grant power (users, key group members, key split members, keys): "
                "every MAC verifies."
            )
    # KMA entries are signed by the cluster CA: checked with its certificate, no master key needed.
    forged = tampered_entries(conn, data_dir.ca_cert.read_bytes(), data_dir.root)
    for row in forged:
        print(f"TAMPERED KMA entry: {row}; it grants nothing", file=sys.stderr)
    if not forged:
        print("KMA entries: every signature by the cluster CA verifies.")
    if recorded:
        print(f"TAMPER events in the audit trail: {recorded} (operation security.tamper)", file=sys.stderr)
    return not bad and not forged and not recorded


def _verify_export(args: argparse.Namespace) -> int:
    from kma.audit.exports import verify_export

    ca_pem = None
    if args.ca is not None:
        ca_pem = args.ca.read_bytes()
    elif args.data_dir:
        ca_pem = open_data_dir(args).ca_cert.read_bytes()
    check = verify_export(args.export, args.signature, ca_pem)
    if check.ok and ca_pem is None:
        # Anyone can make a CA and sign a forged export with it: without the cluster's own CA,
        # a matching signature proves nothing, and scripts read only the exit code.
        print(
            f"Export NOT verified: it is signed consistently, but by a CA this command was not told to "
            f"trust (fingerprint {check.meta.get('ca_fingerprint', '?')} in the signature itself). Give "
            "--ca CA_PEM (your cluster's CA certificate) or --data-dir DIR (a KMA of the cluster).",
            file=sys.stderr,
        )
        return 1
    print(check.summary(), file=sys.stdout if check.ok else sys.stderr)
    return 0 if check.ok else 1


def add_demo(sub: Any) -> None:
    p = sub.add_parser("demo", help="make a ready-to-explore KMA with demo data")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--port", type=int, default=8443, help="management port recorded for the KMA")
    p.add_argument("--json", action="store_true", help="print the credentials as one JSON object")
    p.add_argument(
        "--hsm",
        type=Path,
        metavar="FILE",
        help="a TOML file whose [hsm] table puts the master key in a PKCS#11 token (docs/hsm.md)",
    )
    p.set_defaults(run=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    import tomllib

    from kma.demo import DEMO_KMA, make_demo
    from kma.setup.answers import answers_text, read_hsm

    data_dir = open_data_dir(args, must_exist=False)
    if data_dir.root.exists() and any(data_dir.root.iterdir()):
        raise Conflict(f"{data_dir.root} is not empty; choose a new directory for the demo KMA.")
    hsm = None
    if args.hsm is not None:
        try:
            table = tomllib.loads(answers_text(args.hsm)).get("hsm")
        except tomllib.TOMLDecodeError as exc:
            raise ValidationFailed(f"{args.hsm} is not valid TOML: {exc}.") from None
        if table is None:
            raise ValidationFailed(f"{args.hsm} has no [hsm] table.")
        hsm = read_hsm(table, DEMO_KMA)
    info = make_demo(data_dir, args.port, hsm)
    if args.json:
        print(json.dumps(info))
        return 0
    print(f"Demo KMA made in {info['data_dir']} (CA fingerprint {info['ca_fingerprint']})")
    print("Users (user ID, roles, passphrase):")
    for user in info["users"]:
        print(f"  {user['id']:<8} {','.join(user['roles']):<40} {user['passphrase']}")
    split = info["key_split"]
    print(f"Key split ({split['threshold']} of {len(split['members'])}):")
    for member in split["members"]:
        print(f"  {member['name']:<8} {member['passphrase']}")
    print("Agents (one-time enrollment passphrases):")
    for agent in info["agents"]:
        print(f"  {agent['id']:<14} {agent['enrollment_passphrase']}")
    print(f"All of these are kept in {data_dir.demo_credentials} (readable by you only).")
    print(f"Now run: kma serve --data-dir {data_dir.root}")
    return 0
