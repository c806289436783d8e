"""The Compliance Officer's and Auditor's signed reports (issue 43, docs/reports.md) over a real demo
KMA: the key inventory agrees with the Keys page, the cryptoperiods ending soon are the keys the
demo's year made, an agent that stopped asking shows up once it has been silent long enough, and
the quorum operations of a period name who approved them. Each CSV checks offline against the
cluster's CA, and one changed byte fails the check; an Operator gets none of them."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import replace
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest

from kma.audit.exports import verify_export
from kms_client import Forbidden, ValidationFailed
from tests.integration.test_quorum import creds
from tests.support.agents import enrolled_demo_agent
from tests.support.alert_receivers import SmtpReceiver
from tests.support.kma_process import RunningKma
from tests.support.waiting import wait_until

DAY = 86400


def rows(report: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(report.csv)))


def verified(kma: RunningKma, report: Any, folder: Path) -> bool:
    path = folder / report.filename
    path.write_text(report.csv, newline="")
    path.with_name(path.name + ".sig").write_text(report.signature)
    return verify_export(path, None, kma.ca_pem.encode()).ok


def test_the_key_inventory_counts_what_the_keys_page_lists(fresh_kma: RunningKma, tmp_path: Path) -> None:
    co = fresh_kma.client("co")
    report = co.get_key_inventory_report()
    assert report.filename.startswith("key-inventory-report-") and verified(fresh_kma, report, tmp_path)
    inventory = rows(report)
    listed = Counter(
        (k.key_group_id, str(k.state)) for k in co.iter_all(co.list_keys) if k.key_group_id is not None
    )
    by_group = {(r["id"], r["state"]): int(r["keys"]) for r in inventory if r["by"] == "key_group"}
    assert by_group == dict(listed)
    # Every key was made by the demo's one KMA, at Dallas; its pool holds the keys not yet issued
    sites = {r["id"] for r in inventory if r["by"] == "site"}
    assert sites == {"dallas"}
    pool = {r["state"]: int(r["keys"]) for r in inventory if r["by"] == "kma_key_pool"}
    assert set(pool) <= {"ready", "generated"} and sum(pool.values()) > 0
    # One changed byte and it no longer checks
    tampered = report.csv.replace("backup-dallas", "backup-dallaz", 1)
    assert not verified(fresh_kma, replace(report, csv=tampered), tmp_path)


def test_cryptoperiods_ending_are_the_live_keys_deactivated_within_the_horizon(fresh_kma: RunningKma) -> None:
    auditor = fresh_kma.client("auditor")
    # The demo's year: E00004's key (day 300 of 400, a one-year life) ends in 265 days, E00006's
    # (day 330) in 295; E00005's is compromised, E00003's already over.
    soon = rows(auditor.get_cryptoperiods_report(days=270))
    assert [r["data_unit"] for r in soon] == ["E00004"]
    assert 263 <= int(soon[0]["days_left"]) <= 265 and soon[0]["key_group"] == "backup-dallas"
    later = rows(auditor.get_cryptoperiods_report(days=300))
    assert [r["data_unit"] for r in later] == ["E00004", "E00006"]
    with pytest.raises(ValidationFailed):
        auditor.get_cryptoperiods_report(days=0)


def test_an_agent_silent_long_enough_is_listed_with_why(
    fresh_kma: RunningKma, tmp_path_factory: pytest.TempPathFactory
) -> None:
    enrolled_demo_agent(fresh_kma, tmp_path_factory, "t10k-dal-01")
    co = fresh_kma.client("co")
    assert rows(co.get_agents_report(silent_days=30, expiring_days=90)) == []  # it just spoke
    fresh_kma.advance_clock(31 * DAY)
    listed = rows(fresh_kma.client("co").get_agents_report(silent_days=30, expiring_days=90))
    assert [(r["agent"], r["site"], r["why"]) for r in listed] == [
        ("t10k-dal-01", "dallas", "silent for 30 days or more")
    ]
    # Its certificate (ten years) is within a horizon of ten years
    far = rows(fresh_kma.client("co").get_agents_report(silent_days=365, expiring_days=3650))
    assert [r["why"] for r in far] == ["certificate expires within 3650 days"]


def test_quorum_operations_of_a_period_name_their_approvers(fresh_kma: RunningKma, tmp_path: Path) -> None:
    so = fresh_kma.client("so")
    so.create_user(
        "ivy",
        "Ivy Inspector",
        ["auditor"],
        "ivy reads the whole trail",
        credentials=creds(fresh_kma, "alice", "bob", "carol"),
    )
    today = fresh_kma.client("so").get_status().time.astimezone(UTC).date()
    auditor = fresh_kma.client("auditor")
    report = auditor.get_quorum_operations_report(since=str(today), until=str(today))
    assert verified(fresh_kma, report, tmp_path)
    done = [r for r in rows(report) if r["type"] == "create_user"]
    assert len(done) == 1 and "ivy" in done[0]["summary"]
    assert done[0]["approvals"] == "alice (entered by so); bob (entered by so); carol (entered by so)"
    yesterday = str(today - timedelta(days=1))
    assert rows(auditor.get_quorum_operations_report(since=yesterday, until=yesterday)) == []
    with pytest.raises(ValidationFailed, match="end after it begins"):
        auditor.get_quorum_operations_report(since=str(today), until=yesterday)
    operator = fresh_kma.client("op")
    for refused in (
        operator.get_key_inventory_report,
        lambda: operator.get_quorum_operations_report(since=str(today), until=str(today)),
    ):
        with pytest.raises(Forbidden):
            refused()
    # Each report made is in the audit trail
    assert [e.condition for e in auditor.iter_audit_events(operation="report.quorum-operations")] == 2 * [
        "success"
    ]


def test_scheduled_reports_land_in_the_folder_and_by_e_mail_and_a_failure_is_reported(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    smtp = SmtpReceiver()
    smtp.start()
    try:
        so = fresh_kma.client("so")
        channel = so.add_alert_channel(
            "Compliance mailbox",
            "email",
            {
                "address": smtp.address,
                "sender": "kma@example.com",
                "recipients": ["compliance@example.com"],
                "ca_pem": smtp.tls.ca_pem,
            },
            {},
        ).id
        folder = tmp_path / "reports"
        folder.mkdir()
        # Bad input is refused, naming what is wrong; nothing is set
        with pytest.raises(ValidationFailed, match="does not exist"):
            so.set_report_schedule("weekly", str(tmp_path / "nowhere"), ["key-inventory"])
        with pytest.raises(ValidationFailed, match="at least one report"):
            so.set_report_schedule("weekly", str(folder), [])
        with pytest.raises(ValidationFailed):
            so.set_report_schedule("weekly", str(folder), ["everything"])
        with pytest.raises(Forbidden):
            fresh_kma.client("co").set_report_schedule("weekly", str(folder), ["agents"])
        assert fresh_kma.client("co").get_report_schedule().frequency == "off"

        set_to = so.set_report_schedule(
            "weekly", str(folder), ["quorum-operations", "key-inventory"], channel
        )
        assert set_to.reports == ("key-inventory", "quorum-operations") and set_to.email_channel_id == channel
        # The first run comes at once, the next a week later
        wait_until(lambda: len(list(folder.glob("*.pdf"))) == 2, 30, "the scheduled reports")  # written last
        for made in folder.glob("*.csv"):
            assert verify_export(made, None, fresh_kma.ca_pem.encode()).ok, made
            assert made.with_suffix(".pdf").read_bytes().startswith(b"%PDF-1.4")  # to read beside it
        # (the channel may also carry the KMA's current warnings: its test clock is one)
        mail = wait_until(
            lambda: next((m for m in smtp.messages if "Signed reports" in m["Subject"]), None),
            30,
            "the reports' e-mail",
        )
        assert mail["To"] == "compliance@example.com"
        attached = sorted(p.get_filename() for p in mail.walk() if p.get_filename())
        assert attached == sorted(f.name for f in folder.iterdir())  # each CSV, its signature, its PDF

        # The folder taken away: the next run fails, said in the schedule and the audit trail
        for made in folder.iterdir():
            made.unlink()
        folder.rmdir()
        fresh_kma.advance_clock(7 * DAY + 60)
        auditor = fresh_kma.client("auditor")
        wait_until(lambda: auditor.get_report_schedule().last_error, 30, "the failed run")
        assert "does not exist" in auditor.get_report_schedule().last_error
        failed = list(auditor.iter_audit_events(operation="report.scheduled"))
        assert [e.severity for e in failed] == ["error"]
    finally:
        smtp.stop()
