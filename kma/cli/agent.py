"""`kma agent enroll`, `renew` and `simulate`: an encryption agent's side, for demos and load."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_agent(sub: Any) -> None:
    p = sub.add_parser("agent", help="act as an encryption agent: enroll, simulate tape drives")
    commands = p.add_subparsers(dest="agent_command", required=True, metavar="SUBCOMMAND")

    enroll = commands.add_parser("enroll", help="enroll with a KMA's service listener")
    enroll.add_argument("--kma", required=True, help="the KMA's service address, HOST:PORT")
    enroll.add_argument("--agent-id", required=True)
    enroll.add_argument(
        "--passphrase-file",
        required=True,
        type=Path,
        help="a file holding the one-time enrollment passphrase (first line)",
    )
    enroll.add_argument(
        "--out", required=True, type=Path, help="directory for the key, certificates and config"
    )
    enroll.add_argument(
        "--ca-fingerprint",
        help="the CA fingerprint `kma serve` printed (SHA256:...); "
        "without it the fingerprint is shown and trusted on first use",
    )
    for flag, what in (
        ("--drive-model", "the drive's model, e.g. 'IBM TS1160'"),
        ("--drive-generation", "LTO-5..LTO-9, T10000A-D, T9840A-D (docs/media.md)"),
        ("--library", "the tape library the drive is in"),
        ("--library-partition", "its partition of the library"),
    ):
        enroll.add_argument(flag, default=None, help=what)
    enroll.set_defaults(run=run_enroll)

    renew = commands.add_parser(
        "renew",
        help="renew the agent's certificate over mutual TLS (no passphrase) once less than a third "
        "of its validity is left, or now with --now",
    )
    renew.add_argument(
        "--agent-dir", required=True, type=Path, help="the --out directory of `kma agent enroll`"
    )
    renew.add_argument("--now", action="store_true", help="renew even if it is not due yet")
    renew.set_defaults(run=run_renew)

    sim = commands.add_parser("simulate", help="act as N tape drives mounting tapes")
    sim.add_argument(
        "--agent-dir", required=True, type=Path, help="the --out directory of `kma agent enroll`"
    )
    sim.add_argument("--drives", type=int, default=4)
    sim.add_argument("--rate", type=float, default=2.0, help="mounts per second, all drives together")
    sim.add_argument("--duration", type=float, default=10.0, help="seconds to run (default 10)")
    sim.add_argument("--mounts", type=int, default=None, help="stop after this many mounts")
    sim.add_argument("--write-ratio", type=float, default=0.3, help="share of mounts that write (0..1)")
    sim.add_argument(
        "--rewrite-ratio",
        type=float,
        default=0.1,
        help="share of writes that start from the beginning of the tape (0..1)",
    )
    sim.add_argument("--tapes", type=int, default=50, help="volsers PREFIX00001 .. PREFIXnnnnn")
    sim.add_argument(
        "--prefix",
        default="S",
        help="volser prefix (default S: apart from the demo's own E and A cartridges)",
    )
    sim.add_argument("--seed", type=int, default=None)
    sim.add_argument("--verbose", action="store_true", help="print every mount")
    sim.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    sim.set_defaults(run=run_simulate)


def run_enroll(args: argparse.Namespace) -> int:
    from kma.agent.enroll import EnrollmentError, enroll

    lines = args.passphrase_file.read_text(encoding="utf-8").splitlines()
    passphrase = lines[0].strip() if lines else ""
    try:
        names = ("drive_model", "drive_generation", "library", "library_partition")
        drive = {n: getattr(args, n) for n in names if getattr(args, n) is not None}
        result = enroll(args.kma, args.agent_id, passphrase, args.out, args.ca_fingerprint, drive)
    except EnrollmentError as exc:
        print(f"kma agent enroll: {exc}", file=sys.stderr)
        return 2
    if args.ca_fingerprint is None:
        print(f"Trusted the cluster CA on first use: {result.ca_fingerprint}")
    print(f"Agent '{result.agent_id}' enrolled; files in {result.out_dir}")
    for kma in result.kmas:
        print(f"  KMA {kma['id']} ({kma['site_id']}) {kma['service_address']} {kma['status']}")
    print(f"PyKMIP: ProxyKmipClient(config_file='{result.out_dir / 'pykmip.conf'}')")
    return 0


def run_renew(args: argparse.Namespace) -> int:
    from kma.agent.enroll import EnrollmentError
    from kma.agent.renew import expires_at, renew, renewal_due

    try:
        if not args.now and not renewal_due(args.agent_dir):
            print(f"Not due: the certificate is valid until {expires_at(args.agent_dir):%Y-%m-%d %H:%M} UTC")
            return 0
        until = renew(args.agent_dir)
    except (EnrollmentError, OSError, ValueError) as exc:
        print(f"kma agent renew: {exc}", file=sys.stderr)
        return 2
    print(
        f"Renewed: the new certificate is valid until {until:%Y-%m-%d %H:%M} UTC; files in {args.agent_dir}"
    )
    return 0


def run_simulate(args: argparse.Namespace) -> int:
    from kma.agent.simulator import Simulation, simulate

    if (
        not 0 <= args.write_ratio <= 1
        or not 0 <= args.rewrite_ratio <= 1
        or args.rate <= 0
        or args.drives < 1
    ):
        print(
            "kma agent simulate: ratios are 0..1, the rate and the number of drives positive", file=sys.stderr
        )
        return 2
    sim = Simulation(
        args.agent_dir,
        args.drives,
        args.rate,
        None if args.mounts else args.duration,
        args.mounts,
        args.write_ratio,
        args.rewrite_ratio,
        args.tapes,
        args.prefix,
        args.seed,
    )
    summary = simulate(sim, (lambda line: print(line, flush=True)) if args.verbose else None)
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"{summary['mounts']} mounts in {summary['seconds']} s ({summary['writes']} writes, "
            f"{summary['reads']} reads): {summary['keys_issued']} new keys, {summary['rewrites']} written "
            f"from beginning of tape, {summary['failures']} failures; key manager time per mount "
            f"p50 {summary['latency_ms']['p50']} ms, p99 {summary['latency_ms']['p99']} ms"
        )
        served = ", ".join(f"{address} ({mounts})" for address, mounts in summary["served_by"].items())
        print(f"mounts served by {served or 'no KMA'}; failovers to the next KMA: {summary['failovers']}")
        for error in summary["errors"]:
            print(f"  {error}")
    return 0 if summary["failures"] == 0 else 1
