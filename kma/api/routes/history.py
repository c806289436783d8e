"""Histories: one key's, one data unit's or one agent's lifecycle timeline and its events.

For the audit readers (the Auditor, and the Compliance Officer who owns data unit and key
history; the Security Officer, as with the audit trail itself) and for the Operator, who works with
these keys, tapes and agents every day and reads how each came to its state (the audit trail as a
whole stays the audit readers').
"""

from __future__ import annotations

from fastapi import APIRouter

from kma.api import audit_schemas
from kma.api.deps import HistoryRead, Kma
from kma.services import history

router = APIRouter(tags=["history"])


@router.get("/keys/{key_id}/history", response_model=audit_schemas.History)
def key_history(key_id: str, kma: Kma, actor: HistoryRead) -> history.History:
    return history.key_history(kma, key_id)


@router.get("/data-units/{unit_id}/history", response_model=audit_schemas.History)
def data_unit_history(unit_id: str, kma: Kma, actor: HistoryRead) -> history.History:
    return history.data_unit_history(kma, unit_id)


@router.get("/agents/{agent_id}/history", response_model=audit_schemas.History)
def agent_history(agent_id: str, kma: Kma, actor: HistoryRead) -> history.History:
    return history.agent_history(kma, agent_id)
