"""A signed report (issue 43's reports): a CSV someone hands on, signed like the audit export (the
cluster's audit key, a detached signature record), checked offline by `kma audit verify --export
REPORT.csv --signature REPORT.csv.sig --ca CA.pem`, and audited as every export is. The users
report (kma/services/reports/user_report.py) and the media report (kma/services/media/media_report.py) are
such reports."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.audit.exports import iso, signature_record
from kma.audit.record import Condition, Retention
from kma.domain.actor import Actor
from kma.services.audit.audit_signer import signer


@dataclass(frozen=True)
class SignedReportRow:
    """A signed report: its CSV and detached signature record; the API's `SignedReport` reads it."""

    filename: str  # NAME-report-STAMP.csv
    csv: str
    signature: str  # the .sig file's exact text (JSON): what was signed, by whom, for whom


def _cell(value: Any) -> str:
    """A spreadsheet reads no cell of it as a formula (OWASP's rule, as the audit export)."""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "'") else text


def signed_report(
    kma: Appliance, actor: Actor, name: str, what: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> SignedReportRow:
    """The CSV `name`.csv of `rows` under `columns`, its signature record, and its file name."""
    sig = signer(kma)  # a locked KMA signs nothing (503)
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[_cell(v) for v in r] for r in rows])
    body = out.getvalue().encode("utf-8")
    created = iso(kma.clock.now())
    details = {
        "report": what,
        "cluster": kma.store.scalar("SELECT name FROM cluster") or "",
        "kma_id": kma.kma_id,
        "created_at": created,
        "created_by": actor.entity_id,
        "rows": len(rows),
    }
    record = signature_record(
        sig, hashlib.sha256(body).hexdigest(), f"{name}.csv", kma.data_dir.ca_cert.read_bytes(), details
    )
    kma.audit(
        actor,
        f"report.{name}",
        f"made a signed report of {what} ({len(rows)} rows)",
        condition=Condition.SUCCESS,
        subject=("report", name),
        retention=Retention.LONG,
        event_class="audit",
    )
    stamp = created.replace(":", "").replace("-", "")
    return SignedReportRow(
        filename=f"{name}-report-{stamp}.csv",
        csv=body.decode("utf-8"),
        signature=json.dumps(record, ensure_ascii=False, indent=1) + "\n",
    )
