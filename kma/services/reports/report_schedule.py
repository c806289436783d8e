"""Signed reports on a schedule (issue 43, docs/reports.md): daily, weekly or monthly, the chosen
reports are made by this KMA (signed by the cluster's audit key, as when asked for) into a folder on
its machine, each as its signed CSV and a PDF to read (kma/services/reports/report_pdf.py), and, when an
e-mail alert channel is named, sent on it as attachments.

The schedule is this KMA's (`report_schedules`, one row per KMA), as its backup schedule is, and
works the same way (kma/services/schedules.py): a worker looks every CHECK_S seconds whether
a period has passed since the last attempt; a failed attempt (a locked KMA signs nothing; the folder
gone; the mail server refusing) is an audit event of severity error, and the next attempt waits a
period. The quorum operations report of a run covers the period since the one before.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path

from kma.alerts import mail
from kma.alerts.message import DeliveryFailed
from kma.appliance import Appliance
from kma.audit.exports import iso
from kma.domain.actor import Actor
from kma.errors import KmaError, ValidationFailed
from kma.services import alert_channels
from kma.services.media.media_report import get_media_report
from kma.services.reports.compliance_reports import (
    DAY,
    MAX_DAYS,
    Period,
    get_agents_report,
    get_cryptoperiods_report,
    get_key_inventory_report,
    get_quorum_operations_report,
)
from kma.services.reports.report_pdf import report_pdf
from kma.services.reports.signed_report import SignedReportRow
from kma.services.reports.user_report import get_users_report
from kma.services.schedules import Scheduler, attempted, check_folder, run_failed
from kma.store import Stmt

PERIODS = {"daily": 86400, "weekly": 7 * 86400, "monthly": 30 * 86400}
FREQUENCIES = ("off", *PERIODS)
Make = Callable[[Appliance, Actor, Period], SignedReportRow]
# The reports a schedule may make, with the horizons of the Reports dialog's defaults.
REPORTS: dict[str, Make] = {
    "key-inventory": lambda kma, actor, _p: get_key_inventory_report(kma, actor),
    "cryptoperiods": lambda kma, actor, _p: get_cryptoperiods_report(kma, actor, 90),
    "agents": lambda kma, actor, _p: get_agents_report(kma, actor, 30, 90),
    "quorum-operations": get_quorum_operations_report,
    "users": lambda kma, actor, _p: get_users_report(kma, actor),
    "media": lambda kma, actor, _p: get_media_report(kma, actor),
}


@dataclass(frozen=True)
class Schedule:
    """This KMA's report schedule; the API's `ReportSchedule` reads it."""

    kma_id: str
    frequency: str = "off"
    folder: str = ""
    reports: list[str] = field(default_factory=list)
    email_channel_id: str | None = None
    updated_at: int | None = None
    updated_by: str | None = None
    last_attempt_at: int | None = None
    last_error: str | None = None

    @property
    def next_at(self) -> int | None:
        period = PERIODS.get(self.frequency)
        return None if period is None else (self.last_attempt_at or 0) + period


def get_report_schedule(kma: Appliance) -> Schedule:
    row = kma.store.query_one("SELECT * FROM report_schedules WHERE kma_id = ?", (kma.kma_id,))
    if row is None:
        return Schedule(kma.kma_id)
    return Schedule(
        kma.kma_id,
        row["frequency"],
        row["folder"],
        [r for r in row["reports"].split(",") if r],
        row["email_channel_id"],
        row["updated_at"],
        row["updated_by"],
        row["last_attempt_at"],
        row["last_error"],
    )


def set_report_schedule(
    kma: Appliance,
    actor: Actor,
    frequency: str,
    folder: str,
    reports: list[str],
    email_channel_id: str | None,
) -> Schedule:
    if frequency not in FREQUENCIES:
        raise ValidationFailed(f"The frequency must be one of {', '.join(FREQUENCIES)}.")
    unknown = sorted(set(reports) - REPORTS.keys())
    if unknown:
        raise ValidationFailed(f"No such report: {', '.join(unknown)}; the reports are {', '.join(REPORTS)}.")
    chosen = [r for r in REPORTS if r in reports]
    if frequency != "off":
        check_folder(folder)
        if not chosen:
            raise ValidationFailed("Choose at least one report to make on the schedule.")
    if email_channel_id:
        alert_channels.email_channel(kma, email_channel_id)
    now = kma.clock.now()
    said = f"{frequency}: {', '.join(chosen)} into {folder}" if frequency != "off" else "off"
    if frequency != "off" and email_channel_id:
        said += f", sent on e-mail channel '{email_channel_id}'"
    kma.commit(
        actor,
        "report.schedule",
        [
            Stmt(
                "INSERT INTO report_schedules (kma_id, frequency, folder, reports, email_channel_id, "
                "updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (kma_id) DO UPDATE SET "
                "frequency = excluded.frequency, folder = excluded.folder, reports = excluded.reports, "
                "email_channel_id = excluded.email_channel_id, updated_at = excluded.updated_at, "
                "updated_by = excluded.updated_by, last_error = NULL",
                (
                    kma.kma_id,
                    frequency,
                    folder,
                    ",".join(chosen),
                    email_channel_id or None,
                    now,
                    actor.entity_id,
                ),
            )
        ],
        f"set KMA {kma.kma_id}'s report schedule: {said}",
        ("kma", kma.kma_id),
    )
    report_scheduler(kma).wake()
    return get_report_schedule(kma)


def run_if_due(kma: Appliance) -> list[str] | None:
    """Make the scheduled reports when a period has passed since the last attempt; their file
    names, or None."""
    schedule = get_report_schedule(kma)
    now = kma.clock.now()
    if schedule.next_at is None or now < schedule.next_at:
        return None
    since = schedule.last_attempt_at or now - PERIODS[schedule.frequency]
    period = Period(max(since, now - MAX_DAYS * DAY), now)  # a KMA stopped for years: its last ten
    kma.store.write(attempted(kma, "report_schedules", now, None))
    try:
        check_folder(schedule.folder)
        made = [REPORTS[name](kma, kma.itself, period) for name in schedule.reports]
        for report in made:
            csv_file = Path(schedule.folder) / report.filename
            _write_new(csv_file, report.csv.encode("utf-8"))
            _write_new(csv_file.with_name(csv_file.name + ".sig"), report.signature.encode("utf-8"))
            _write_new(csv_file.with_suffix(".pdf"), report_pdf(report))
        if schedule.email_channel_id:
            _send(kma, schedule.email_channel_id, made, period)
    except (KmaError, OSError, DeliveryFailed) as exc:
        run_failed(kma, "report_schedules", "report.scheduled", "scheduled reports", now, exc)
        return None
    return [r.filename for r in made]


def _write_new(path: Path, data: bytes) -> None:
    """A new file of this account's only, renamed into place: the folder may be a share others
    write into, and a link planted under the name is replaced, not followed."""
    part = path.with_name(path.name + ".part")
    part.unlink(missing_ok=True)
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(part, path)


def _send(kma: Appliance, channel_id: str, made: list[SignedReportRow], period: Period) -> None:
    ch, secret = alert_channels.email_channel(kma, channel_id)
    cluster = " ".join(str(kma.store.scalar("SELECT name FROM cluster") or "").split())
    msg = EmailMessage()
    msg["Subject"] = f"[KMA {cluster}] Signed reports of {iso(period.until)[:10]}"
    msg["From"] = ch.settings["sender"]
    msg["To"] = ", ".join(ch.settings["recipients"])
    names = "\n".join(f"- {r.filename}" for r in made)
    msg.set_content(
        f"The scheduled reports of KMA {kma.kma_id}, made at {iso(period.until)}:\n{names}\n\n"
        "Each CSV is signed by the cluster's audit key; its signature is the .sig file attached beside it.\n"
        "The PDFs are for reading: they are not signed.\n"
        "Check both offline: kma audit verify --export REPORT.csv --ca <the cluster's CA certificate>\n"
    )
    for r in made:
        pdf = r.filename.removesuffix(".csv") + ".pdf"
        msg.add_attachment(report_pdf(r), maintype="application", subtype="pdf", filename=pdf)
        msg.add_attachment(r.csv.encode("utf-8"), maintype="text", subtype="csv", filename=r.filename)
        msg.add_attachment(
            r.signature.encode("utf-8"),
            maintype="application",
            subtype="json",
            filename=f"{r.filename}.sig",
        )
    host, port = alert_channels.smtp_of(ch)
    mail.send_message(
        host, port, ch.settings.get("ca_pem"), ch.settings.get("username"), secret.get("password"), msg
    )


class ReportScheduler(Scheduler):
    name = "kma-report-schedule"

    def run(self) -> str | None:
        made = run_if_due(self.kma)
        return f"scheduled reports made: {', '.join(made)}" if made else None


def report_scheduler(kma: Appliance) -> ReportScheduler:
    """This KMA's one report scheduler (`kma serve` starts it: kma/runtime/running.py)."""
    return kma.part(ReportScheduler)
