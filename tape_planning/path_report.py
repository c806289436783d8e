"""The path plan in words: the stage table (bottleneck marked as paper 002 marks it), then what to
change, streaming, compression, restore, settings and the checklist. Text for ``kma plan``, HTML
for the Planning area and its PDF; both walk :func:`path_sections`.
"""

from __future__ import annotations

from html import escape

from tape_planning import advice
from tape_planning.figures import PAPERS, figure
from tape_planning.path import Path, drives_for_window
from tape_planning.units import format_size, format_window

STAGE_HEADER = ["stage", "MB/s", "bottleneck?", "source", "how"]


def stage_rows(path: Path) -> list[list[str]]:
    return [
        [
            s.name,
            "no limit" if s.rate is None else f"{s.rate:,.1f}",
            f"Yes ({s.kind})" if s is path.bottleneck else "No",
            s.source,
            s.detail,
        ]
        for s in path.stages
    ]


def path_sections(path: Path) -> list[tuple[str, list[str]]]:
    b = path.bottleneck
    d = path.drive
    rate = [
        f"The path sustains {path.rate:,.1f} MB/s; the bottleneck is {b.name} ({b.kind}).",
        f"{format_size(path.data_bytes)} takes {path.hours:,.1f} h against a "
        f"{format_window(path.window_s)} window"
        + (": it fits." if path.hours * 3600 <= path.window_s else ": it does not fit."),
        _sizing(path),
    ]
    if path.crc_factor < 1:
        rate.insert(
            1,
            f"CRC checking is on: {1 - path.crc_factor:.0%} off the rate, included above "
            f"({figure('crc_cost').source}).",
        )
    drive = [
        f"{d.name}: {d.native_mb_per_s:g} MB/s {d.rate_label} ({d.native_source})."
        + (f" Lowest streaming rate {d.min_streaming_mb_per_s:g} MB/s." if d.min_streaming_mb_per_s else ""),
    ]
    if d.makers_figure:
        drive.append(
            "A maker's specification, not a measurement: real paths reach less (paper 003, line 123)."
        )
    compression = [
        f"Planned at {path.compression.ratio:.2f}:1: {path.compression.source}.",
        *path.compression.notes,
    ]
    return [
        ("Rate and bottleneck", rate),
        ("What to change first", advice.change_first(path)),
        ("Streaming", list(advice.streaming(path).lines)),
        ("Drive", drive),
        ("Compression", compression),
        ("Restore", advice.restore(path)),
        ("Application settings", advice.settings(path)),
        ("My backup is slow: checklist", advice.checklist(path)),
    ]


def _sizing(path: Path) -> str:
    need = path.data_bytes / 1e6 / path.window_s
    if path.bottleneck.kind != "Tape":
        return (
            f"The window needs {need:,.1f} MB/s, {need / path.rate:.1f} times what this path gives: more "
            f"drives do not help until the {path.bottleneck.kind.lower()} stage is faster "
            f"({figure('sizing_caveat').source})."
        )
    return (
        f"Drives for the window (paper 003's sizing, {figure('sizing_drives').source}): data an hour / "
        f"one drive's sustained rate = {drives_for_window(path):.1f}; this assumes the stages before the "
        "drives keep up as drives are added."
    )


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]


def path_text(path: Path) -> str:
    out = ["Backup data path (paper 002's method: the slowest stage sets the rate)"]
    out += [f"  {line}" for line in _table(STAGE_HEADER, stage_rows(path))]
    for heading, lines in path_sections(path):
        out += ["", heading, *[f"  {line}" for line in lines]]
    out += ["", "Papers: " + "; ".join(f"{k} {v}" for k, v in PAPERS.items())]
    return "\n".join(out) + "\n"


def path_html(path: Path, chart: str = "", table: bool = True) -> str:
    """The stage table (unless the page draws its own), then ``chart`` (an <img> of the rate per
    stage, for the PDF), then the rest."""
    head = "".join(f"<th align='left'>{escape(h)}</th>" for h in STAGE_HEADER)
    body = "".join(
        ("<tr style='background:#fde0dc'>" if row[2] != "No" else "<tr>")
        + "".join(f"<td>{escape(v)}</td>" for v in row)
        + "</tr>"
        for row in stage_rows(path)
    )
    parts = ["<h2>Backup data path</h2>"]
    if table:
        parts.append(f"<table border='1' cellspacing='0' cellpadding='3'><tr>{head}</tr>{body}</table>")
    parts.append(chart)
    for heading, lines in path_sections(path):
        parts.append(
            f"<h3>{escape(heading)}</h3><ul>" + "".join(f"<li>{escape(x)}</li>" for x in lines) + "</ul>"
        )
    parts.append(
        "<p><small>Papers: " + escape("; ".join(f"{k} {v}" for k, v in PAPERS.items())) + "</small></p>"
    )
    return "".join(parts)
