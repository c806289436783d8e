"""The signed report of users and their roles, directory mapping included (issue 43's reports): a
CSV the Auditor, the Compliance Officer or a Security Officer hands on, signed like the audit
export (the cluster's audit key, a detached signature record) and checked offline by
`kma audit verify --export REPORT.csv --signature REPORT.csv.sig --ca CA.pem`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from typing import Any

from kma.appliance import Appliance
from kma.audit.exports import iso, signature_record
from kma.audit.record import Condition, Retention
from kma.domain.actor import Actor
from kma.services import directory
from kma.services.audit_signer import signer
from kma.services.users import SELECT, user_row

COLUMNS = ("kind", "id", "name", "roles", "enabled", "signs_in_with", "two_step", "created_at", "updated_at")
KIND = "users.csv"


def _cell(value: Any) -> str:
    """A spreadsheet reads no cell of it as a formula (OWASP's rule, as the audit export)."""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "'") else text


def _rows(kma: Appliance) -> list[list[str]]:
    rows = []
    for row in kma.store.query(f"{SELECT} ORDER BY id"):
        u = user_row(row)
        rows.append(
            [
                "user",
                u["id"],
                u["name"],
                " ".join(u["roles"]),
                "yes" if u["enabled"] else "no",
                f"directory {u['directory_account']}" if u["directory_account"] else "local passphrase",
                "on" if u["second_factor"] else "off",
                iso(u["created_at"]),
                iso(u["updated_at"]),
            ]
        )
    settings = directory.get_directory(kma)
    if settings is not None:
        state = "on" if settings["enabled"] else "off"
        for m in settings["group_roles"]:
            when = iso(settings["updated_at"])
            rows.append(
                [
                    "directory_group",
                    m["group"],
                    "",
                    " ".join(m["roles"]),
                    state,
                    settings["url"],
                    "",
                    "",
                    when,
                ]
            )
    return rows


def users_report(kma: Appliance, actor: Actor) -> dict[str, str]:
    """The CSV and its signature record; audited, as every export is."""
    sig = signer(kma)  # a locked KMA signs nothing (503)
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    rows = _rows(kma)
    writer.writerows([[_cell(v) for v in r] for r in rows])
    body = out.getvalue().encode("utf-8")
    created = iso(kma.clock.now())
    details = {
        "report": "users and their roles",
        "cluster": kma.store.scalar("SELECT name FROM cluster") or "",
        "kma_id": kma.kma_id,
        "created_at": created,
        "created_by": actor.entity_id,
        "rows": len(rows),
    }
    record = signature_record(
        sig, hashlib.sha256(body).hexdigest(), KIND, kma.data_dir.ca_cert.read_bytes(), details
    )
    kma.audit(
        actor,
        "report.users",
        f"made a signed report of users and their roles ({len(rows)} rows)",
        condition=Condition.SUCCESS,
        subject=("report", "users"),
        retention=Retention.LONG,
        event_class="audit",
    )
    stamp = created.replace(":", "").replace("-", "")
    return {
        "filename": f"users-report-{stamp}.csv",
        "csv": body.decode("utf-8"),
        "signature": json.dumps(record, ensure_ascii=False, indent=1) + "\n",
    }
