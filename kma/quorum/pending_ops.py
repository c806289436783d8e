"""Pending quorum operations as the API shows them: one operation with its approvals and new key
split members' enrolment, and the list of them (the Quorum page). Reading only: what changes an
operation is the engine (engine.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kma.appliance import Appliance
from kma.errors import NotFound
from kma.quorum.protected import OP_TYPES
from kma.services.paging import (
    Filter,
    ListQuery,
    Page,
    PageRequest,
    SearchIndex,
    indexed_rows,
    list_page,
    one_of,
)

STATES = ("pending", "executed", "expired", "deleted", "failed")
PUBLIC = (
    "id, type, summary, request, requested_by, submitted_at, updated_at, expires_at, state, threshold, result"
)
LIST = ListQuery(
    select=f"SELECT {PUBLIC} FROM pending_quorum_ops",
    sort_fields={
        "submitted_at": "submitted_at",
        "expires_at": "expires_at",
        "updated_at": "updated_at",
        "type": ("type", "submitted_at"),
        "state": ("state", "submitted_at"),
    },
    default_sort="submitted_at",
    default_order="desc",
    search=("id", "summary", "type", "requested_by"),
    search_index=SearchIndex("id", indexed_rows("pending_quorum_ops_text", "id")),
    filters={
        "state": Filter("state = :value", one_of(*STATES)),
        "type": Filter("type = :value", one_of(*OP_TYPES)),
    },
    filtered_sorts=dict.fromkeys(("expires_at", "updated_at", "type", "state"), frozenset({"state", "type"})),
)


def _view(row: Any, approvals: Sequence[Any], enrolment: Sequence[Any] = ()) -> dict[str, Any]:
    out = {k: row[k] for k in PUBLIC.split(", ")}
    out["request"] = json.loads(out["request"])
    out["approvals_needed"] = out.pop("threshold")
    out["approvals"] = [
        {"member": a["member_name"], "approved_by": a["approved_by"], "approved_at": a["approved_at"]}
        for a in approvals
    ]
    out["enrolment"] = [
        {"member": e["member_name"], "enrolled_at": e["enrolled_at"], "enrolled_from": e["enrolled_from"]}
        for e in enrolment
    ]
    return out


def _approvals(kma: Appliance, op_ids: Sequence[str]) -> dict[str, list[Any]]:
    return _rows_by_op(
        kma,
        op_ids,
        "op_id, member_name, approved_by, approved_at FROM quorum_approvals",
        "approved_at, member_name",
    )


def _enrolments(kma: Appliance, op_ids: Sequence[str]) -> dict[str, list[Any]]:
    """New key split members of key split changes, and whether each has set their passphrase."""
    columns_from = "op_id, member_name, enrolled_at, enrolled_from FROM key_split_enrolments"
    return _rows_by_op(kma, op_ids, columns_from, "position")


def _rows_by_op(kma: Appliance, op_ids: Sequence[str], columns_from: str, order: str) -> dict[str, list[Any]]:
    """The rows of a per-operation table for these operations, in one query, grouped by op_id."""
    found: dict[str, list[Any]] = {op_id: [] for op_id in op_ids}
    if op_ids:
        marks = ",".join("?" * len(op_ids))
        sql = f"SELECT {columns_from} WHERE op_id IN ({marks}) ORDER BY {order}"
        for row in kma.store.query(sql, list(op_ids)):
            found[row["op_id"]].append(row)
    return found


def get_op(kma: Appliance, op_id: str) -> dict[str, Any]:
    row = kma.store.query_one(f"SELECT {PUBLIC} FROM pending_quorum_ops WHERE id = ?", (op_id,))
    if row is None:
        raise NotFound(f"There is no quorum operation '{op_id[:64]}'.")
    return _view(row, _approvals(kma, [op_id])[op_id], _enrolments(kma, [op_id])[op_id])


def op_page(kma: Appliance, req: PageRequest) -> Page:
    page = list_page(kma.store, LIST, req)
    ids = [r["id"] for r in page.items]
    approvals, enrolments = _approvals(kma, ids), _enrolments(kma, ids)
    return page.with_items([_view(r, approvals[r["id"]], enrolments[r["id"]]) for r in page.items])
