"""Verifying the audit trail's hash chains, chunk by chunk.

A verification first reads, in one snapshot, what it covers (`plan_verification`): each chain's
recorded head, the latest trusted signed checkpoint per chain, and how many events that is. Then
`check_chains` reads each chain in order of `chain_seq`, a few thousand events per query, through
one `ChainVerifier` (kma/audit/chain.py), reporting how many events it has checked. Reading in
chunks lets the background job (kma/services/audit/audit_verify_job.py) run for minutes over ten
million events without holding one read transaction open all that time (which would keep
SQLite's WAL, or rqlite's, from being checkpointed), and lets it say how far it got.

One snapshot (`verify_connection`: the CLI, a report, a prune's check) reads every event of each
chain; the background job reads each chain up to the head it recorded at its start, since the
KMA goes on appending while it runs: those newer events are the next verification's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kma.audit.chain import ChainReport, ChainVerifier
from kma.audit.checkpoint import Checkpoint
from kma.audit.signing import certificate_problem, signature_checks
from kma.store.base import Store

CHUNK = 2000  # events per query: ~70 ms of hashing on a busy two-core machine (30,000 events/s)
TO_THE_END = 2**63 - 1  # a chain verified to whatever it holds, not to a recorded head
# A chain's next chunk: the unique (kma_id, chain_seq) index walks it in order.
CHUNK_SQL = (
    "SELECT * FROM audit_events WHERE kma_id = ? AND chain_seq > ? AND chain_seq <= ? "
    "ORDER BY chain_seq LIMIT ?"
)
# Reads rows (sqlite3.Row) for a query and its parameters: a store's own snapshot per call, or
# one connection's open transaction.
Read = Callable[[str, Sequence[Any]], Sequence[Any]]
Progress = Callable[[int, int], None]  # (events checked, events to check)


class Stopped(Exception):
    """The verification was told to stop (its KMA is closing) before it ended."""


@dataclass(frozen=True)
class ChainPlan:
    """What one verification covers, read in one snapshot."""

    heads: Mapping[str, tuple[int, str]]
    checkpoints: Mapping[str, Checkpoint]  # the latest trusted one per chain
    problems: tuple[str, ...]  # checkpoints whose signature does not check
    chains: tuple[tuple[str, int], ...]  # (kma_id, last chain_seq to check), in kma_id order
    total: int  # the events those ranges hold
    checkpoint_mark: int  # the newest checkpoint's ID: a prune meanwhile makes a newer one


def trusted_checkpoints(conn: sqlite3.Connection, ca_pem: bytes) -> tuple[dict[str, Checkpoint], list[str]]:
    """Per chain, the latest checkpoint whose signature checks, and what failed to check."""
    keys: dict[int, bytes | None] = {}
    for row in conn.execute("SELECT id, public_key, certificate_pem FROM audit_signing_keys"):
        problem = certificate_problem(row["certificate_pem"], bytes(row["public_key"]), ca_pem)
        keys[row["id"]] = None if problem else bytes(row["public_key"])
    best: dict[str, Checkpoint] = {}
    problems: list[str] = []
    for row in conn.execute("SELECT * FROM audit_checkpoints ORDER BY kma_id, chain_seq, id"):
        cp = Checkpoint.from_row(row)
        public_key = keys.get(cp.signing_key_id)
        if public_key is None or not signature_checks(public_key, bytes(cp.signature), cp.message()):
            problems.append(
                f"signed checkpoint #{cp.id} (KMA {cp.kma_id}) does not check: it was "
                "altered, or not signed by this cluster's audit key"
            )
            continue
        best[cp.kma_id] = cp
    return best, problems


def cluster_ca(conn: sqlite3.Connection) -> bytes:
    row = conn.execute("SELECT ca_cert_pem FROM cluster").fetchone()
    return str(row[0]).encode() if row else b""


def _chain_ids(conn: sqlite3.Connection) -> list[str]:
    """The KMAs with events, as an index skip-scan (one probe per KMA, not per event)."""
    found: list[str] = []
    current = conn.execute("SELECT min(kma_id) FROM audit_events").fetchone()[0]
    while current is not None:
        found.append(current)
        after = conn.execute("SELECT min(kma_id) FROM audit_events WHERE kma_id > ?", (current,))
        current = after.fetchone()[0]
    return found


def plan_verification(conn: sqlite3.Connection, ca_pem: bytes | None, to_heads: bool) -> ChainPlan:
    """`to_heads`: check each chain up to its head as recorded now (a KMA that goes on writing);
    else every event it holds (one snapshot, in which an event past the head is a break)."""
    rows = conn.execute("SELECT kma_id, chain_seq, hash FROM audit_heads")
    heads = {r[0]: (int(r[1]), str(r[2])) for r in rows}
    checkpoints, problems = trusted_checkpoints(conn, ca_pem or cluster_ca(conn))
    chains = tuple(
        (kma_id, heads[kma_id][0] if to_heads and kma_id in heads else TO_THE_END)
        for kma_id in sorted(set(heads) | set(_chain_ids(conn)))
    )
    count = "SELECT count(*) FROM audit_events WHERE kma_id = ? AND chain_seq <= ?"
    total = sum(int(conn.execute(count, chain).fetchone()[0]) for chain in chains)
    mark = int(conn.execute("SELECT coalesce(max(id), 0) FROM audit_checkpoints").fetchone()[0])
    return ChainPlan(heads, checkpoints, tuple(problems), chains, total, mark)


def check_chains(
    read: Read,
    plan: ChainPlan,
    progress: Progress | None = None,
    between_chunks: Callable[[], bool] | None = None,
) -> ChainReport:
    """Verify what `plan` covers, chunk by chunk; stops at the first break. `progress` hears the
    count after every chunk; `between_chunks` runs between them and returns True to stop (raises
    `Stopped`)."""
    verifier = ChainVerifier(plan.heads, plan.checkpoints)
    for kma_id, upto in plan.chains:
        after = -(2**63)  # an event slipped in below seq 1 is read too, and breaks the chain
        while True:
            rows = read(CHUNK_SQL, (kma_id, after, upto, CHUNK))
            for row in rows:
                broken = verifier.check(row)
                if broken:
                    return broken
            if progress is not None:
                progress(verifier.checked, plan.total)
            if len(rows) < CHUNK:
                break
            after = int(rows[-1]["chain_seq"])
            if between_chunks is not None and between_chunks():
                raise Stopped()
    report = verifier.finish()
    if report.intact and plan.problems:
        return ChainReport(False, report.events_checked, None, plan.problems[0], report.checkpoints)
    return report


def verify_chain(store: Store, ca_pem: bytes | None = None) -> ChainReport:
    """Verify every chain from its latest trusted checkpoint (or from its start), in one snapshot.

    `ca_pem` is the CA this KMA serves TLS with (tls/ca.pem); the copy in the database is used
    only when none is given, since whoever can rewrite the database could replace that copy.
    """
    with store.snapshot() as conn:
        return verify_connection(conn, ca_pem)


def verify_connection(
    conn: sqlite3.Connection, ca_pem: bytes | None = None, progress: Progress | None = None
) -> ChainReport:
    """Verify every chain as `conn`'s open transaction (one snapshot) shows it."""
    plan = plan_verification(conn, ca_pem, to_heads=False)
    return check_chains(lambda sql, params: conn.execute(sql, params).fetchall(), plan, progress)


def report_json(report: ChainReport) -> Mapping[str, Any]:
    return {
        "intact": report.intact,
        "events_checked": report.events_checked,
        "first_bad_event_id": report.first_bad_event_id,
        "reason": report.reason,
        "checkpoints": [
            {"id": cp.id, "kma_id": cp.kma_id, "chain_seq": cp.chain_seq, "created_at": cp.created_at}
            for cp in report.checkpoints
        ],
    }
