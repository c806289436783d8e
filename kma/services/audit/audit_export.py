"""Exports of the current filter: a streamed, signed CSV and a signed HTML report.

Both are signed with the cluster's audit key, so a locked KMA exports nothing (503), and both
are themselves audited: who took which events out of the KMA is part of the record.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from kma.appliance import Appliance
from kma.audit import report as html_report
from kma.audit.chain import ChainReport
from kma.audit.exports import iso, signature_record, stream_csv
from kma.audit.record import Condition, Retention
from kma.domain.actor import Actor
from kma.services.audit.audit_log import iter_events, where_clause
from kma.services.audit.audit_signer import signer
from kma.services.audit.audit_verification import report_json, verify_chain
from kma.services.paging import PageRequest

REPORT_ROWS = 5000


def _filters(req: PageRequest) -> dict[str, str]:
    return {**dict(req.filters), **({"q": req.search} if req.search else {})}


def _details(kma: Appliance, actor: Actor, req: PageRequest) -> dict[str, Any]:
    return {
        "cluster": kma.store.scalar("SELECT name FROM cluster") or "",
        "kma_id": kma.kma_id,
        "created_at": iso(kma.clock.now()),
        "created_by": actor.entity_id,
        "filter": _filters(req),
    }


def _describe(req: PageRequest) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(_filters(req).items())) or "no filter"


def _audit_export(kma: Appliance, actor: Actor, operation: str, message: str) -> None:
    """What left the KMA, kept as long as the longest retention: exports are evidence too."""
    kma.audit(
        actor,
        operation,
        message,
        condition=Condition.SUCCESS,
        subject=("audit", "export"),
        retention=Retention.LONG,
        event_class="audit",
    )


def csv_export(kma: Appliance, actor: Actor, req: PageRequest) -> Iterator[bytes]:
    """The CSV, oldest first. Checks and audits before the first byte goes out."""
    sig = signer(kma)
    where_clause(req)  # a bad filter is refused now, as a 422, not half-way through the stream
    _audit_export(kma, actor, "audit.export", f"exported audit events as signed CSV ({_describe(req)})")
    ca_pem = kma.data_dir.ca_cert.read_bytes()
    return stream_csv(iter_events(kma.store, req), sig, ca_pem, _details(kma, actor, req))


@dataclass(frozen=True)
class AuditReportRow:
    """A signed HTML report of the trail; the API's `Report` reads it."""

    filename: str
    html: str
    signature: str  # the detached signature file's exact text (JSON)
    chain: ChainReport  # the verification the report states


def get_audit_report(
    kma: Appliance, actor: Actor, req: PageRequest, row_limit: int = REPORT_ROWS
) -> AuditReportRow:
    """The HTML report (first `row_limit` events) stating the chain verification, and its signature."""
    sig = signer(kma)
    where, bound = where_clause(req)
    total = int(kma.store.scalar(f"SELECT count(*) FROM audit_events WHERE {where}", bound) or 0)
    ca_pem = kma.data_dir.ca_cert.read_bytes()
    verified = verify_chain(kma.store, ca_pem)
    chain = dict(report_json(verified))
    details = _details(kma, actor, req)
    html = html_report.render(
        cluster=details["cluster"],
        kma_id=kma.kma_id,
        created_at=kma.clock.now(),
        created_by=actor.entity_id,
        filters=details["filter"],
        chain=chain,
        total=total,
        events=islice(iter_events(kma.store, req), row_limit),
        row_limit=row_limit,
    )
    body = html.encode("utf-8")
    statement = {**details, "rows": min(total, row_limit), "total": total, "chain": chain}
    record = signature_record(sig, hashlib.sha256(body).hexdigest(), "html", ca_pem, statement)
    stamp = details["created_at"].replace(":", "").replace("-", "")
    made = f"made a signed audit report ({_describe(req)}; chain {'intact' if chain['intact'] else 'BROKEN'})"
    _audit_export(kma, actor, "audit.report", made)
    return AuditReportRow(
        filename=f"audit-report-{stamp}.html",
        html=html,
        signature=json.dumps(record, ensure_ascii=False, indent=1) + "\n",
        chain=verified,
    )
