"""Every drive the path planner knows, and where its rate comes from.

Measured first: paper 000's four drives (its NetBackup cells), 001's LTO-3 and DLT-S4, 002's HP
Ultrium 960 and 003's first LTO. The drives sites buy now (LTO-5 to LTO-9, T10000C/D, TS1140 to
TS1160) come from their makers' published specifications and are always printed as such.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tape_planning import measurements as m
from tape_planning.citations import cite
from tape_planning.figures import figure, makers_drives, value
from tape_planning.units import PlanError

# The line of each drive's "Characterization Data Charts" heading in paper 000 (data/README.md).
_CHARTS_LINE = {"T10000": 1090, "T9840D": 1474, "LTO4": 1806, "T10000B": 2375}
_NATIVE_LINES = {
    "T10000": "lines 72, 1016",
    "T9840D": "lines 1364-1365",
    "LTO4": "lines 1699-1700",
    "T10000B": "line 2310",
}


@dataclass(frozen=True)
class Rate:
    rate: float  # MB/s of data before the drive compresses it
    source: str
    note: str = ""


@dataclass(frozen=True)
class PathDrive:
    drive: str
    name: str
    native_mb_per_s: float
    native_source: str
    makers_figure: bool  # True: the maker's specification, not a measurement
    min_streaming_mb_per_s: float | None
    cartridge_native_gb: float | None
    _write: Callable[[float], Rate]
    rate_label: str = "native"

    def write_rate(self, ratio: float) -> Rate:
        return self._write(ratio)

    def read_rate(self, ratio: float) -> Rate:
        """Restores read at the write rate unless a paper measured the read (002's Ultrium 960)."""
        if self.drive == "ULTRIUM960":
            f = figure("ultrium960_read_windows")
            return Rate(value("ultrium960_read_windows"), f.source)
        written = self._write(ratio)
        similar = figure("backup_restore_similar")
        return Rate(written.rate, written.source, f"read taken as the write rate ({similar.source})")


def _scaled(native: float, source: str) -> Callable[[float], Rate]:
    def rate(ratio: float) -> Rate:
        if ratio <= 1:
            return Rate(native, source)
        return Rate(native * ratio, source, f"native {native:g} MB/s x {ratio:.2f}:1")

    return rate


def _measured_000(drive: str) -> Callable[[float], Rate]:
    """The best measured encrypted cell of 1 GB files (or the 10:1 row) at the nearest ratio."""

    def rate(ratio: float) -> Rate:
        rows = m.nearest_workloads(drive, 1_000_000_000, ratio)
        best = [
            max(
                (
                    (m.measured(drive, n, size, w, True), size, n, w)
                    for size in m.buffer_sizes(drive)
                    for n in m.BUFFER_COUNTS
                ),
                key=lambda t: t[0],
            )
            for w in rows
        ]
        mb, size, buffers, workload = min(best, key=lambda t: t[0])
        line = _CHARTS_LINE[drive]
        return Rate(
            mb,
            f"paper 000, {cite(str(line))}, line {line}: measured",
            f"{workload}, {size} KB x {buffers} buffers, encrypted",
        )

    return rate


def _lto3(ratio: float) -> Rate:
    return _mixed_or_scaled("lto3", ratio)


def _dlts4(ratio: float) -> Rate:
    return _mixed_or_scaled("dlts4", ratio)


def _mixed_or_scaled(key: str, ratio: float) -> Rate:
    """001 measured both drives on a mixed real-world set: that average is preferred for mixed data."""
    share, mixed = value("mix_compressible_share"), value("mix_compressible_ratio")
    if abs(ratio - 1 / (share / mixed + 1 - share)) < 0.01:
        f = figure(f"{key}_average_backup")
        return Rate(
            value(f.key), f.source, f"measured on mixed real data ({value(key + '_effective_ratio'):g}:1)"
        )
    return _scaled(value(f"{key}_native"), figure(f"{key}_native").source)(ratio)


def _ultrium960(ratio: float) -> Rate:
    f = figure("ultrium960_write_windows")
    note = "measured with compressible test data"
    if ratio <= 1:
        note += "; the papers have no incompressible figure for this drive, so this is an upper bound"
    return Rate(value("ultrium960_write_windows"), f.source, note)


def _paper_drives() -> dict[str, PathDrive]:
    drives: dict[str, PathDrive] = {}
    for key in m.DRIVES:
        facts = m.facts()[key]
        drives[key] = PathDrive(
            key,
            m.DRIVE_NAMES[key],
            facts.native_mb_per_s,
            f"paper 000, {_NATIVE_LINES[key]}",
            False,
            None,
            facts.cartridge_native_gb,
            _measured_000(key),
        )
    lto1 = figure("lto1_native")
    drives["LTO1"] = PathDrive(
        "LTO1",
        "IBM LTO Ultrium (1st gen.)",
        value("lto1_native"),
        lto1.source,
        False,
        None,
        None,
        _scaled(value("lto1_native"), lto1.source),
    )
    for key, name, fn in (("LTO3", "IBM LTO-3", _lto3), ("DLTS4", "Quantum DLT-S4", _dlts4)):
        native = figure(f"{key.lower()}_native")
        drives[key] = PathDrive(key, name, value(native.key), native.source, False, None, None, fn)
    w = figure("ultrium960_write_windows")
    drives["ULTRIUM960"] = PathDrive(
        "ULTRIUM960",
        "HP Ultrium 960",
        value(w.key),
        w.source,
        False,
        None,
        None,
        _ultrium960,
        "measured tape write with compressible data",
    )
    return drives


def _makers() -> dict[str, PathDrive]:
    out = {}
    for d in makers_drives().values():
        source = f"maker's figure: {d.source}"
        out[d.drive] = PathDrive(
            d.drive,
            d.name,
            d.native_mb_per_s,
            source,
            True,
            d.min_streaming_mb_per_s,
            d.cartridge_native_gb,
            _scaled(d.native_mb_per_s, source),
        )
    return out


def all_drives() -> dict[str, PathDrive]:
    return {**_makers(), **_paper_drives()}


def path_drive(text: str) -> PathDrive:
    wanted = str(text).upper().replace("-", "").replace(" ", "").removeprefix("HP").removeprefix("STK")
    drives = all_drives()
    if wanted in drives:
        return drives[wanted]
    raise PlanError("drive", f"{str(text).strip() or 'nothing'!r} is not known; known: {', '.join(drives)}")
