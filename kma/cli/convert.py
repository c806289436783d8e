"""`kma convert-to-cluster`: make an embedded KMA the first node of a cluster (kma/cluster/convert.py)."""

from __future__ import annotations

import argparse
from typing import Any

from kma.cli.admin import open_data_dir


def add_convert(sub: Any) -> None:
    p = sub.add_parser(
        "convert-to-cluster",
        help="make this embedded KMA the first node of a cluster (its next start moves the store to rqlite)",
    )
    p.add_argument("--data-dir", required=True)
    p.add_argument(
        "--raft-address",
        required=True,
        metavar="HOST:PORT",
        help="where the other KMAs' rqlite nodes reach this one (mutual TLS)",
    )
    p.add_argument(
        "--http-address",
        default="127.0.0.1:4001",
        metavar="127.0.0.1:PORT",
        help="the local rqlite node's HTTP API, on loopback only",
    )
    p.set_defaults(run=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    from kma.cluster.convert import make_first_node

    data_dir = open_data_dir(args)
    config = make_first_node(data_dir, args.raft_address, args.http_address)
    print(f"KMA {config.node_id} is now the first node of a cluster (Raft on {config.raft_address}).")
    print("Restart `kma serve`: it moves the store into rqlite, nothing lost; the embedded file is kept")
    print(f"as {data_dir.root / 'kma.db.before-cluster'}.")
    return 0
