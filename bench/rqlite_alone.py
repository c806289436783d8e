"""rqlited alone, with the statements a cluster KMA's outbox shipping sends: what a replica costs.

    python bench/rqlite_alone.py [--kmas 4] [--cells 1x10,16x10,64x10,256x3] [--seconds 12]

Starts a cluster of `--kmas` KMAs on loopback (each `kma serve` runs its rqlited as the product
configures it: node and HTTP mutual TLS, the node credential) and leaves the KMAs idle. Then, from
this process, one thread per node sends that node's rqlited, through the KMA's own client, requests
of B audit events at R requests per second (a cell `BxR`), for `--seconds`, in three forms:
- `params`: one multi-row INSERT with every value a parameter (the shipping before issue 47);
- `json`: the rows as one JSON parameter read by json_each (kma/store/rqlite_outbox_shipping.py);
- `bare`: the same rows, as `params`, into a table without indexes or triggers;
each followed by the write mark's upsert, as a shipment is. The rqliteds' CPU (all nodes, their idle
CPU measured first and taken off) gives the cost of one request and of one row, summed over the
nodes: the part of a cluster operation that no change in the KMA can take away. The events go into
chains of their own (sequence numbers from 10^9) of the throwaway cluster. The last line is one
JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cluster import rqlited_pid  # noqa: E402
from bench.keys import cpu_seconds, exit_on_signals  # noqa: E402
from kma.audit.chain import EVENT_COLUMNS  # noqa: E402
from kma.cluster.rqlited import RqliteNode  # noqa: E402
from kma.store import audit_rows  # noqa: E402
from kma.store.rqlite_http import RqliteClient, rqlite_statement  # noqa: E402
from kma.store.rqlite_outbox_shipping import EVENTS_FROM_JSON  # noqa: E402
from tests.support.cluster import add_node, files_of, first_node, replica  # noqa: E402
from tests.support.kma_process import RunningKma  # noqa: E402

FORMS = ("params", "json", "bare")
MARK_SQL = (
    "INSERT INTO cluster_write_marks (kma_id, seq) VALUES (?, ?) "
    "ON CONFLICT (kma_id) DO UPDATE SET seq = excluded.seq"
)
BARE = "bench_bare_events"


class Sender:
    """One node's requests: its own chain of made-up events (copies of a real one)."""

    def __init__(self, client: RqliteClient, kma_id: str, template: dict[str, Any]) -> None:
        self.client, self.kma_id, self.template = client, kma_id, template
        self.seq = 10**9
        self.sent = 0

    def rows(self, count: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(count):
            self.seq += 1
            out.append({**self.template, "kma_id": self.kma_id, "chain_seq": self.seq})
        return out

    def request(self, form: str, count: int) -> list[list[Any]]:
        rows = self.rows(count)
        if form == "json":
            first = [EVENTS_FROM_JSON, json.dumps([[r[c] for c in EVENT_COLUMNS] for r in rows])]
        else:
            stmt = audit_rows.events(rows)
            sql = stmt.sql.replace("audit_events", BARE) if form == "bare" else stmt.sql
            first = rqlite_statement(sql, stmt.params)
        return [first, [MARK_SQL, f"bench-{self.kma_id}", self.seq]]

    def run(self, form: str, count: int, rate: float, until: float) -> None:
        due = time.time()
        while time.time() < until:
            self.client.execute(self.request(form, count))
            self.sent += 1
            due += 1.0 / rate
            time.sleep(max(0.0, due - time.time()))


def measure(
    senders: list[Sender], pids: list[int], idle: float, form: str, count: int, rate: float, seconds: float
) -> dict[str, float]:
    for s in senders:
        s.sent = 0
    until = time.time() + seconds
    before, began = sum(cpu_seconds(p) for p in pids), time.time()
    threads = [threading.Thread(target=s.run, args=(form, count, rate, until)) for s in senders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - began
    busy = sum(cpu_seconds(p) for p in pids) - before - idle * elapsed
    requests = sum(s.sent for s in senders)
    return {
        "requests_per_s": round(requests / elapsed, 1),
        "rows_per_s": round(requests * count / elapsed, 1),
        "cpu_ms_per_s": round((busy + idle * elapsed) * 1000 / elapsed, 1),
        "us_per_request": round(busy * 1e6 / requests) if requests else float("nan"),
        "us_per_row": round(busy * 1e6 / (requests * count)) if requests else float("nan"),
    }


def main() -> int:
    exit_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kmas", type=int, default=4)
    parser.add_argument("--cells", default="1x10,16x10,64x10,256x3")
    parser.add_argument("--seconds", type=float, default=12.0)
    args = parser.parse_args()
    cells = [tuple(int(x) for x in c.split("x")) for c in args.cells.split(",")]
    out: dict[str, Any] = {"kmas": args.kmas, "load_average_before": os.getloadavg()[0], "cells": {}}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.umask(0o077)
        first, ca = first_node(tmp / "a")
        kmas: list[RunningKma] = [first]
        try:
            for i in range(2, args.kmas + 1):
                kmas.append(add_node(first, ca, tmp, f"kma-dal-{i}"))
                kmas[-1].start()
            conn = replica(first)
            template = dict(conn.execute("SELECT * FROM audit_events ORDER BY id DESC LIMIT 1").fetchone())
            template.pop("id")
            ids = [str(r[0]) for r in conn.execute("SELECT id FROM kmas ORDER BY id")]
            conn.close()
            clients = [RqliteNode(files_of(k)).client() for k in kmas]
            columns = ", ".join(c for c in EVENT_COLUMNS)
            clients[0].execute([[f"CREATE TABLE IF NOT EXISTS {BARE} (id INTEGER PRIMARY KEY, {columns})"]])
            senders = [Sender(c, ids[i], template) for i, c in enumerate(clients)]
            pids = [rqlited_pid(k) for k in kmas]
            time.sleep(3)
            before = sum(cpu_seconds(p) for p in pids)
            time.sleep(args.seconds)
            idle = (sum(cpu_seconds(p) for p in pids) - before) / args.seconds
            out["idle_cpu_ms_per_s"] = round(idle * 1000, 1)
            print(f"rqliteds idle (the KMAs' polls, Raft's heartbeats): {idle * 1000:.1f} ms/s", flush=True)
            for count, rate in cells:
                for form in FORMS:
                    f = measure(senders, pids, idle, form, count, rate, args.seconds)
                    out["cells"][f"{form}_{count}x{rate}"] = f
                    print(
                        f"{form:6} {count:4} events x {rate:3}/s per node: {f['requests_per_s']} requests/s, "
                        f"rqliteds {f['cpu_ms_per_s']} ms/s; per request {f['us_per_request']} us, "
                        f"per event {f['us_per_row']} us (all nodes, idle taken off)",
                        flush=True,
                    )
            for c in clients:
                c.close()
        finally:
            for k in reversed(kmas):
                k.stop()
    out["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
