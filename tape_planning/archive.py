"""The archive-appliance path (paper 004, DR550 through the SSAM API): object size and aggregation.

Only the measured points the paper states in words are used: nothing between them is read off
its charts or interpolated; any other size or aggregation is answered from the nearest stated point
and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from tape_planning.figures import figure, value
from tape_planning.units import PlanError, format_size, parse_size

KB, MB = 1000, 1000 * 1000  # decimal, as the project counts sizes (units.py)
# (object size, objects a transaction) -> the figure; MB/s for 1 MB objects, objects/s for 8 KB ones
ARCHIVE = {
    (MB, 500): "archive_1mb_500",
    (MB, 25): "archive_1mb_25",
    (8 * KB, 500): "archive_8k_500",
    (8 * KB, 25): "archive_8k_25",
}
RETRIEVE = {(MB, 500): "retrieve_1mb_500", (8 * KB, 500): "retrieve_8k_500"}


@dataclass(frozen=True)
class ArchiveRate:
    operation: str  # "archive" or "retrieve"
    object_bytes: int
    per_transaction: int
    mb_per_s: float
    objects_per_s: float
    source: str
    exact: bool  # the paper states this very point


def archive_rate(object_size: str, per_transaction: int, operation: str = "archive") -> ArchiveRate:
    size = parse_size(object_size, "object size")
    if per_transaction < 1:
        raise PlanError("objects a transaction", "at least 1")
    table = ARCHIVE if operation == "archive" else RETRIEVE
    point = min(table, key=lambda p: (abs(p[0] - size) / p[0], abs(p[1] - per_transaction)))
    f = figure(table[point])
    number = value(f.key)
    if f.unit == "MB/s":
        mb, objects = number, number * MB / point[0]
    else:
        mb, objects = number * point[0] / MB, number
    exact = point == (size, per_transaction)
    return ArchiveRate(operation, point[0], point[1], mb, objects, f.source, exact)


def archive_lines(object_size: str, per_transaction: int, objects: int) -> list[str]:
    lines = []
    for op in ("archive", "retrieve"):
        r = archive_rate(object_size, per_transaction, op)
        asked = (
            ""
            if r.exact
            else (
                f" (the paper states no figure for {object_size} x {per_transaction}; nearest stated point)"
            )
        )
        lines.append(
            f"{op.capitalize()}: {format_size(r.object_bytes)} objects, {r.per_transaction} a transaction: "
            f"{r.mb_per_s:,.1f} MB/s, {r.objects_per_s:,.0f} objects/s ({r.source}){asked}; "
            f"{objects:,} objects take {objects / r.objects_per_s / 3600:,.1f} h."
        )
    lines += [
        "Aggregate many objects a transaction: the overhead is paid once "
        f"({figure('archive_aggregation').source}).",
        "Encrypting in the application server did not slow archiving "
        f"({figure('archive_encryption').source}).",
    ]
    return lines
