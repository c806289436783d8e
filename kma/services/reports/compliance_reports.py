"""The Compliance Officer's and Auditor's signed reports (issue 43, docs/reports.md): what they hand
on every quarter, each a CSV signed like the audit export (kma/services/reports/signed_report.py).

- key inventory: the keys per key group, per site (of the KMA that made them) and per KMA's pool
  of keys not yet issued, by state;
- cryptoperiods: the keys whose cryptoperiod ends within N days (Deactivated then: read, never
  written; destroyable);
- agents: the agents silent for N days or more, and those whose certificate expires within M days;
- quorum operations: those carried out (approved by a quorum) in a period, with who approved them.

The users report (kma/services/reports/user_report.py) and the tapes whose keys are all destroyed (the
media report's relabel list, kma/services/media/media_report.py) are the issue's other two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.audit.exports import iso
from kma.domain.actor import Actor
from kma.domain.lifecycle import key_state_sql
from kma.errors import ValidationFailed
from kma.services.reports.signed_report import SignedReportRow, signed_report

DAY = 86400
MAX_DAYS = 3650  # ten years: beyond, a question for the key policies, not a report


def days_within(days: int, what: str) -> int:
    if not 1 <= days <= MAX_DAYS:
        raise ValidationFailed(f"{what} must be between 1 and {MAX_DAYS} days.")
    return days


@dataclass(frozen=True)
class Period:
    """From `since` to `until` (Unix seconds, `until` excluded)."""

    since: int
    until: int

    def check(self) -> Period:
        if self.until <= self.since:
            raise ValidationFailed("The period must end after it begins.")
        if self.until - self.since > MAX_DAYS * DAY:
            raise ValidationFailed(f"The period can be at most {MAX_DAYS} days.")
        return self


def get_key_inventory_report(kma: Appliance, actor: Actor) -> SignedReportRow:
    state = key_state_sql("k.")
    now = {"now": kma.clock.now()}
    by_group = kma.store.query(
        f"SELECT k.key_group_id AS id, {state} AS state, count(*) AS n FROM keys k "
        "WHERE k.key_group_id IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2",
        now,
    )
    by_site = kma.store.query(
        f"SELECT coalesce(m.site_id, '(no KMA of this cluster)') AS id, {state} AS state, count(*) AS n "
        "FROM keys k LEFT JOIN kmas m ON m.id = k.kma_id GROUP BY 1, 2 ORDER BY 1, 2",
        now,
    )
    pools = kma.store.query(
        f"SELECT k.kma_id AS id, {state} AS state, count(*) AS n FROM keys k WHERE k.activated_at IS NULL "
        "AND k.destroyed_at IS NULL AND k.key_group_id IS NULL AND k.withheld_at IS NULL "
        "GROUP BY 1, 2 ORDER BY 1, 2",
        now,
    )
    rows = [
        [scope, r["id"], r["state"], r["n"]]
        for scope, found in (("key_group", by_group), ("site", by_site), ("kma_key_pool", pools))
        for r in found
    ]
    columns = ("by", "id", "state", "keys")
    return signed_report(kma, actor, "key-inventory", "the key inventory", columns, rows)


def get_cryptoperiods_report(kma: Appliance, actor: Actor, days: int) -> SignedReportRow:
    now = kma.clock.now()
    ending = kma.store.query(
        "SELECT id, key_group_id, data_unit_id, agent_id, activated_at, protect_until, deactivate_at "
        "FROM keys WHERE destroyed_at IS NULL AND activated_at IS NOT NULL AND compromised_at IS NULL "
        "AND deactivate_at > :now AND deactivate_at <= :until ORDER BY deactivate_at, id",
        {"now": now, "until": now + days_within(days, "The cryptoperiods' horizon") * DAY},
    )
    rows = [
        [
            r["id"],
            r["key_group_id"] or "",
            r["data_unit_id"] or "",
            r["agent_id"] or "",
            iso(r["activated_at"]),
            iso(r["protect_until"]),
            iso(r["deactivate_at"]),
            (r["deactivate_at"] - now) // DAY,
        ]
        for r in ending
    ]
    columns = (
        "key_id",
        "key_group",
        "data_unit",
        "agent",
        "activated_at",
        "protect_until",
        "deactivate_at",
        "days_left",
    )
    what = f"keys whose cryptoperiod ends within {days} days"
    return signed_report(kma, actor, "cryptoperiods", what, columns, rows)


def get_agents_report(kma: Appliance, actor: Actor, silent_days: int, expiring_days: int) -> SignedReportRow:
    now = kma.clock.now()
    silent_since = now - days_within(silent_days, "Silent for") * DAY
    expires_by = now + days_within(expiring_days, "Expiring within") * DAY
    found = kma.store.query(
        "SELECT id, site_id, enabled, enrolled_at, certificate_not_after, (SELECT created_at FROM "
        "audit_events WHERE id = (SELECT max(id) FROM audit_events WHERE entity_id = agents.id)) "
        "AS last_contact_at FROM agents WHERE enrolled_at IS NOT NULL ORDER BY id"
    )
    rows: list[list[Any]] = []
    for r in found:
        why = []
        last = r["last_contact_at"]
        if last is None or last <= silent_since:
            why.append(f"silent for {silent_days} days or more")
        if r["certificate_not_after"] is not None and r["certificate_not_after"] <= expires_by:
            gone = r["certificate_not_after"] <= now
            why.append("certificate expired" if gone else f"certificate expires within {expiring_days} days")
        if why:
            rows.append(
                [
                    r["id"],
                    r["site_id"],
                    "yes" if r["enabled"] else "no",
                    iso(last) if last is not None else "never",
                    iso(r["certificate_not_after"]) if r["certificate_not_after"] is not None else "",
                    "; ".join(why),
                ]
            )
    columns = ("agent", "site", "enabled", "last_contact_at", "certificate_expires_at", "why")
    what = f"agents silent for {silent_days} days or whose certificate expires within {expiring_days} days"
    return signed_report(kma, actor, "agents", what, columns, rows)


def get_quorum_operations_report(kma: Appliance, actor: Actor, period: Period) -> SignedReportRow:
    period.check()
    ops = kma.store.query(
        "SELECT o.id, o.type, o.summary, o.requested_by, o.submitted_at, o.updated_at, o.result, "
        "(SELECT group_concat(a.member_name || ' (entered by ' || a.approved_by || ')', '; ') FROM "
        "(SELECT * FROM quorum_approvals WHERE op_id = o.id ORDER BY approved_at, member_name) a) "
        "AS approvals FROM pending_quorum_ops o WHERE o.state = 'executed' AND o.updated_at >= :since "
        "AND o.updated_at < :until ORDER BY o.updated_at, o.id",
        {"since": period.since, "until": period.until},
    )
    rows = [
        [
            r["id"],
            r["type"],
            r["summary"],
            r["requested_by"],
            iso(r["submitted_at"]),
            iso(r["updated_at"]),
            r["approvals"] or "",
            r["result"] or "",
        ]
        for r in ops
    ]
    columns = (
        "operation",
        "type",
        "summary",
        "requested_by",
        "submitted_at",
        "carried_out_at",
        "approvals",
        "result",
    )
    what = f"quorum operations carried out from {iso(period.since)} to {iso(period.until)}"
    return signed_report(kma, actor, "quorum-operations", what, columns, rows)
