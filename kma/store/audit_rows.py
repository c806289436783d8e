"""The statements that store the audit chain: its events and its head (kma/audit/chain.py makes
the events and keeps the head; the store's writer writes them with the group they belong to)."""

from __future__ import annotations

from typing import Any

from kma.audit.chain import EVENT_COLUMNS, AuditChain
from kma.store.batch import Stmt

_INSERT_EVENTS = f"INSERT INTO audit_events ({', '.join(EVENT_COLUMNS)}) VALUES "
_EVENT_ROW = f"({', '.join('?' * len(EVENT_COLUMNS))})"


def events(rows: list[dict[str, Any]]) -> Stmt:
    """One INSERT of many events (the store's writer appends a whole group's events with it)."""
    params = [event[c] for event in rows for c in EVENT_COLUMNS]
    return Stmt(_INSERT_EVENTS + ", ".join([_EVENT_ROW] * len(rows)), params)


def head(chain: AuditChain) -> Stmt:
    """The statement that stores the chain's in-memory head (seq and hash of the last event)."""
    return Stmt(
        "INSERT INTO audit_heads (kma_id, chain_seq, hash) VALUES (?, ?, ?) "
        "ON CONFLICT (kma_id) DO UPDATE SET chain_seq = excluded.chain_seq, hash = excluded.hash",
        (chain.kma_id, chain.seq, chain.head),
    )
