"""A plan in words: plain text for ``kma plan``, HTML for the manager's Planning area and its PDF.

Both say the same things in the same order, from :class:`~tape_planning.plan.Plan` alone.
"""

from __future__ import annotations

from html import escape

from tape_planning import measurements as m
from tape_planning.citations import PAPER, cite
from tape_planning.plan import MIN_KMAS_PER_SITE, SIZING_NOTES, Plan, Setting
from tape_planning.recommendations import Recommendation


def buffer_label(kb: int) -> str:
    return f"{kb // 1024} MB" if kb >= 1024 else f"{kb} KB"


def _mb(value: float) -> str:
    return f"{value:,.3f}"


def _why(plan: Plan, setting: Setting) -> str:
    rule = next((r for r in plan.recommendations if r.key == setting.because), None)
    return (
        f"{rule.text.rstrip('.')} ({cite(rule.lines)})" if rule else "the paper gives none; the measured best"
    )


def sections(plan: Plan) -> list[tuple[str, list[str]]]:
    """The plan as (heading, lines); both renderings below walk this."""
    i, rec, enc, d, c, k = (
        plan.inputs,
        plan.recommended,
        plan.encryption,
        plan.drives,
        plan.cartridges,
        plan.key_service,
    )
    measured = "exactly as measured" if plan.exact_match else "nearest measured row"
    workload = [f"{plan.workload} ({measured} in the paper's {i.drive} tables)", *plan.notes]
    size = buffer_label(rec.buffer_size_kb)
    settings = [
        f"SIZE_DATA_BUFFERS = {plan.touch_files['SIZE_DATA_BUFFERS']} ({size})",
        f"NUMBER_DATA_BUFFERS = {plan.touch_files['NUMBER_DATA_BUFFERS']}",
        "Touch files in <install path>/netbackup/db/config on each media server; no restart needed.",
        f"Measured at {size} x {rec.data_buffers} buffers: {_mb(rec.plain_mb_per_s)} MB/s without "
        f"encryption, {_mb(rec.encrypted_mb_per_s)} MB/s encrypted.",
        f"Why {rec.data_buffers} buffers: {_why(plan, rec)}.",
    ]
    best = plan.best_measured
    if (best.buffer_size_kb, best.data_buffers) != (rec.buffer_size_kb, rec.data_buffers):
        settings.append(
            f"Highest measured figure among the allowed sizes: {buffer_label(best.buffer_size_kb)} x "
            f"{best.data_buffers} buffers, {_mb(best.encrypted_mb_per_s)} MB/s encrypted; the plan "
            "follows the paper's buffer count instead (more buffers cost media-server memory)."
        )
    if plan.multiplexing.rule:
        settings.append(
            f"Multiplexing {i.streams} streams a drive: NUMBER_DATA_BUFFERS {rec.data_buffers} -> "
            f"{plan.multiplexing.data_buffers}, as NUMBER_DATA_BUFFERS above says; restores of multiplexed "
            "backups are slower."
        )
    encryption = [
        f"{enc.overhead_bytes_per_buffer} bytes a {size} buffer: {enc.overhead_percent:.4f}% more data.",
        f"Measured at the recommended setting: {enc.measured_difference_percent:+.2f}% encrypted against "
        f"not; over the whole row {enc.mean_difference_percent:+.2f}% on average, from "
        f"{enc.difference_range_percent[0]:+.1f}% to {enc.difference_range_percent[1]:+.1f}%, both ways: "
        "the paper puts such differences down to variation between test runs.",
    ]
    sizing = [
        f"{d.data_mb_per_hour:,.0f} MB an hour / ({_mb(d.drive_mb_per_s)} MB/s x 3600 = "
        f"{d.drive_mb_per_s * 3600:,.0f} MB an hour a drive) = {d.exact:.1f}: {d.needed} drive"
        f"{'s' if d.needed != 1 else ''}.",
        f"Cartridges: {c.needed} at {_ratio(i.ratio)} ({c.needed_uncompressed} if the data does not "
        f"compress), {c.native_gb or 500:,.0f} GB native each." + (f" {c.note}" if c.note else ""),
        *SIZING_NOTES,
    ]
    keys = [
        f"{k.tape_mounts_per_hour:,.1f} tape mounts an hour, each written from the beginning with a new key.",
        f"One KMA was measured serving {k.kma_new_keys_per_hour:,.0f} new tape keys an hour; this load is "
        f"{_percent(k.load_percent)} of that. Source: {k.capacity_source}.",
        f"KMAs per site: {k.kmas_per_site} (never fewer than {MIN_KMAS_PER_SITE}, so that one can fail "
        "or be serviced while the other keeps serving; key management is outside the data path and "
        "must never slow a mount).",
    ]
    return [
        ("Workload", workload),
        ("NetBackup settings", settings),
        ("Encryption overhead", encryption),
        ("Drives and cartridges", sizing),
        ("Key service", keys),
        ("What the paper recommends", [_rec(r) for r in plan.recommendations]),
    ]


def _percent(value: float) -> str:
    return f"{value:.2f}%" if value >= 0.01 else "less than 0.01%"


def _ratio(ratio: float) -> str:
    return f"{ratio:g}:1"


def _rec(r: Recommendation) -> str:
    who = "" if r.drive == "ALL" else f"{m.DRIVE_NAMES[r.drive]}: "
    return f"{who}{r.text} ({cite(r.lines)})"


def settings_rows(plan: Plan) -> list[list[str]]:
    lines = {r.key: r.lines for r in plan.recommendations}
    return [
        [
            buffer_label(s.buffer_size_kb),
            str(s.data_buffers),
            _mb(s.plain_mb_per_s),
            _mb(s.encrypted_mb_per_s),
            "yes" if s.allowed else "no",
            f"the paper, {cite(lines[s.because])}" if s.because in lines else s.because,
        ]
        for s in plan.settings
    ]


SETTINGS_HEADER = ["buffer size", "buffers", "MB/s", "MB/s encrypted", "allowed here", "buffer count from"]


def throughput_rows(plan: Plan) -> tuple[list[str], list[list[str]]]:
    """Every measured cell of the row: buffers down, buffer size (plain / encrypted) across."""
    sizes = m.buffer_sizes(plan.inputs.drive)
    header = ["buffers"] + [f"{buffer_label(s)} / encrypted" for s in sizes]
    cell = {(t.buffer_size_kb, t.data_buffers): t for t in plan.throughput}
    rows = [
        [str(n)]
        + [
            f"{_mb(cell[(s, n)].plain_mb_per_s)} / {_mb(cell[(s, n)].encrypted_mb_per_s)}"
            + ("*" if cell[(s, n)].suspect else "")
            for s in sizes
        ]
        for n in reversed(m.BUFFER_COUNTS)
    ]
    return header, rows


def _text_table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]


def plan_text(plan: Plan) -> str:
    out = [f"Plan: {plan.inputs.summary()}"]
    for heading, lines in sections(plan):
        out += ["", heading]
        out += [f"  {line}" for line in lines]
    out += ["", "Buffer sizes (buffer count from the paper where it gives one)"]
    out += [f"  {line}" for line in _text_table(SETTINGS_HEADER, settings_rows(plan))]
    header, rows = throughput_rows(plan)
    out += ["", f"Measured MB/s for {plan.workload}, without / with encryption"]
    out += [f"  {line}" for line in _text_table(header, rows)]
    if any(t.suspect for t in plan.throughput):
        out.append("  * repeats the HP LTO4 figure (see the T10000B caveat above)")
    return "\n".join(out) + "\n"


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th align='left'>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table border='1' cellspacing='0' cellpadding='3'><tr>{head}</tr>{body}</table>"


def plan_html(plan: Plan) -> str:
    """The plan for a QTextBrowser / QTextDocument (a small HTML subset: headings, lists, tables)."""
    parts = [f"<h2>Tape encryption plan</h2><p><b>{escape(plan.inputs.summary())}</b></p>"]
    for heading, lines in sections(plan):
        parts.append(f"<h3>{escape(heading)}</h3><ul>")
        parts += [f"<li>{escape(line)}</li>" for line in lines]
        parts.append("</ul>")
    parts.append("<h3>Buffer sizes</h3>" + _html_table(SETTINGS_HEADER, settings_rows(plan)))
    header, rows = throughput_rows(plan)
    parts.append(f"<h3>Measured MB/s for {escape(str(plan.workload))}, without / with encryption</h3>")
    parts.append(_html_table(header, rows))
    if any(t.suspect for t in plan.throughput):
        parts.append("<p>* repeats the HP LTO4 figure (see the T10000B caveat above)</p>")
    parts.append(
        f"<p><small>Source: {PAPER}, chapters 6-9 (the drive characterizations and their "
        "Characterization Data Charts).</small></p>"
    )
    return "".join(parts)
