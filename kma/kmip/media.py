"""The media rules on KMIP's write paths (kma/services/media/media_rules.py): Write Key, Write From
Beginning, and Create or Register of a tape key for a data unit (the Tape Library Profile's new
key, a write from BOT). A refusal becomes a Permission Denied the library's operator can act on."""

from __future__ import annotations

import logging

from kma.audit.record import Condition, Retention
from kma.errors import KmaError
from kma.kmip.context import Call
from kma.kmip.enums import ResultReason
from kma.kmip.messages import KmipError
from kma.services.media import media_rules
from kma.services.media.media_rules import Verdict
from kma.store import Refused, Stmt

log = logging.getLogger(__name__)


async def judged(call: Call, volser: str, asked_group: str | None, from_bot: bool, operation: str) -> Verdict:
    """The rules' verdict on this write; a refusal is audited (within the rate) and raised."""
    access = call.access
    verdict = media_rules.judge_write(call.kma, call.agent_id, access.groups, volser, asked_group, from_bot)
    if verdict.refusal is None and not verdict.warnings:
        return verdict
    record, summary = media_rules.THROTTLE.admit(call.agent_id)
    if summary is not None:
        await call.audit(
            summary.operation, summary.message, condition=Condition.WARNING, subject=("cluster", "media")
        )
    if verdict.refusal is None:
        if record:
            await call.audit(
                "kmip.media_warning",
                f"served a write key despite: {'; '.join(verdict.warnings)}",
                condition=Condition.WARNING,
                retention=Retention.MEDIUM,
            )
        return verdict
    call.kma.part(media_rules.MediaRefusals).count(verdict.refusal)
    if record:
        await call.audit(
            operation,
            f"refused a write key: {verdict.message}",
            condition=Condition.ERROR,
            retention=Retention.MEDIUM,
        )
    raise KmipError(ResultReason.PERMISSION_DENIED, verdict.message, audited=True)


async def record_writer(call: Call, volser: str, verdict: Verdict, from_bot: bool) -> None:
    """The tape's writer generation, after its key was committed. Best effort: the key is served
    whatever becomes of this (a cluster KMA cut off from its peers records nothing)."""
    if verdict.drive is None or not verdict.records:
        return
    sql, params = media_rules.writer_recorded(volser, verdict.drive, from_bot)
    how = "from BOT" if from_bot else "first"
    try:
        await call.commit(
            "kmip.media_writer",
            [Stmt(sql, params)],
            f"tape '{volser}' written {how} by a {verdict.drive} drive",
            ("data_unit", volser),
            retention=Retention.LONG,
        )
    except (KmipError, KmaError, Refused) as failed:
        log.warning("the writer generation of tape %s was not recorded: %s", volser, failed)
