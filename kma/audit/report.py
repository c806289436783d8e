"""The audit report as a self-contained HTML page (no scripts, no external resources).

It states plainly what was checked and what was found: the chain verification result first,
then the filter and the matching events. The detached signature (exports.signature_record)
covers every byte, so the page needs no embedded secrets or scripts to be trusted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from kma.audit.exports import iso

STYLE = """body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1b1b1b}
h1{font-size:1.5em;margin-bottom:.2em}.sub{color:#555}
.verdict{padding:.8em 1em;border-radius:6px;margin:1em 0;font-weight:600}
.ok{background:#e3f4e1;border:1px solid #3c8d2f}.bad{background:#fbe3e1;border:1px solid #b3261e}
table{border-collapse:collapse;width:100%;font-size:12px}th,td{border:1px solid #ccc;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f0f0f0}td.h{font-family:monospace;font-size:11px}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:600}"""
EVENT_COLUMNS = (
    ("id", "#"),
    ("created_at", "Time (UTC)"),
    ("kma_id", "KMA"),
    ("site_id", "Site"),
    ("operation", "Operation"),
    ("severity", "Severity"),
    ("condition", "Condition"),
    ("event_class", "Class"),
    ("entity_id", "By"),
    ("entity_address", "Address"),
    ("subject_id", "Subject"),
    ("message", "Message"),
    ("retention", "Retention"),
    ("hash", "Hash"),
)


def _cell(event: Mapping[str, Any], column: str) -> str:
    value = event.get(column)
    if column == "created_at":
        return iso(int(value or 0))
    if column == "subject_id" and value:
        return f"{event.get('subject_type') or ''} {value}".strip()
    if column == "hash":
        return str(value)[:16] + "…"
    return "" if value is None else str(value)


def render(
    *,
    cluster: str,
    kma_id: str,
    created_at: int,
    created_by: str,
    filters: Mapping[str, str],
    chain: Mapping[str, Any],
    total: int,
    events: Iterable[Mapping[str, Any]],
    row_limit: int,
) -> str:
    intact = bool(chain.get("intact"))
    if intact:
        verdict = (
            f"Audit chain INTACT: all {chain.get('events_checked', 0):,} events verified; "
            "none was changed, removed or inserted."
        )
        starts = chain.get("checkpoints") or []
        if starts:
            verdict += " Verified from signed checkpoints: " + "; ".join(
                f"KMA {c['kma_id']} up to chain #{c['chain_seq']} ({iso(c['created_at'])})" for c in starts
            )
    else:
        bad = chain.get("first_bad_event_id")
        verdict = (
            "Audit chain BROKEN" + (f" at event #{bad}" if bad else "") + f": {chain.get('reason')}. "
            "Preserve the KMA's data directory and tell the Security Officer."
        )
    rows = []
    shown = 0
    for event in events:
        shown += 1
        cells = (
            f'<td class="{"h" if c == "hash" else ""}">{escape(_cell(event, c))}</td>'
            for c, _ in EVENT_COLUMNS
        )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    filter_text = ", ".join(f"{k} = {v}" for k, v in sorted(filters.items())) or "none (every event)"
    more = f"<p>{total:,} matching events, oldest first.</p>"
    if total > shown:
        more = (
            f"<p>Showing the first {shown:,} of {total:,} matching events (oldest first); the CSV "
            "export holds them all.</p>"
        )
    head = "".join(f"<th>{escape(title)}</th>" for _, title in EVENT_COLUMNS)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Audit report: {escape(cluster)}</title>
<style>{STYLE}</style></head><body>
<h1>Audit report: {escape(cluster)}</h1>
<p class="sub">Made {escape(iso(created_at))} by KMA {escape(kma_id)} for {escape(created_by)}.
This report is signed; check it with
<code>kma audit verify --export REPORT.html --signature REPORT.html.sig --ca CLUSTER-CA.pem</code>.</p>
<div class="verdict {"ok" if intact else "bad"}">{escape(verdict)}</div>
<dl><dt>Filter</dt><dd>{escape(filter_text)}</dd>
<dt>Matching events</dt><dd>{total:,}</dd>
<dt>Row limit</dt><dd>{row_limit:,}</dd></dl>
{more}
<table><thead><tr>{head}</tr></thead><tbody>
{chr(10).join(rows)}
</tbody></table></body></html>
"""
