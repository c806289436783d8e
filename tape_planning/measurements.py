"""The white paper's measurements, as shipped in ``tape_planning/data`` (see its README).

864 NetBackup throughput figures (MB/s) of four drives by data buffers, buffer size, file size,
compressibility and encryption, plus the per-drive facts the paper states. Nothing here computes
a figure: everything is read from the CSV files unchanged.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from tape_planning.units import PlanError, parse_ratio, parse_size

DRIVES = ("T10000", "T9840D", "LTO4", "T10000B")
DRIVE_NAMES = {
    "T10000": "StorageTek T10000",
    "T9840D": "StorageTek T9840D",
    "LTO4": "HP LTO4",
    "T10000B": "StorageTek T10000B",
}
BUFFER_COUNTS = (4, 8, 16, 32)
ENCRYPTION_OVERHEAD_BYTES = 100  # per data buffer; drive-facts.csv, row ALL (paper lines 995-1010)

# The caveat of data/README.md: these encrypted T10000B cells repeat LTO4's to three decimals.
T10000B_CAVEAT = (
    "T10000B caveat: in the paper's 8- and 4-buffer T10000B tables, the Encrypted columns of the "
    "small-file rows (32KB, 256KB, 1MB) repeat the HP LTO4 figures to three decimals (36 values; "
    "Chapter 9, “Characterization Data Charts”); this may be a copy error in the paper. They are "
    "shown as printed."
)
_SUSPECT_FILE_SIZES = {"32KB", "256KB", "1MB"}


@dataclass(frozen=True)
class Cell:
    """One measured figure: MB/s of a single-stream NetBackup backup, as printed in the paper."""

    drive: str
    data_buffers: int
    buffer_size_kb: int
    file_size: str  # the row label, e.g. "1GB"
    compressibility: str  # "1:1", "2:1" or "10:1"
    encrypted: bool
    mb_per_s: float

    @property
    def suspect(self) -> bool:
        """One of the 36 T10000B cells that repeat LTO4's (see :data:`T10000B_CAVEAT`)."""
        return (
            self.drive == "T10000B"
            and self.encrypted
            and self.data_buffers in (4, 8)
            and self.file_size in _SUSPECT_FILE_SIZES
        )


@dataclass(frozen=True)
class Workload:
    """A measured row: one file size and compressibility of one drive's tables."""

    file_size: str
    compressibility: str

    @property
    def file_size_bytes(self) -> int:
        return parse_size(self.file_size)

    @property
    def ratio(self) -> float:
        return parse_ratio(self.compressibility)

    def __str__(self) -> str:
        return f"{self.file_size} files, {self.compressibility}"


@dataclass(frozen=True)
class DriveFacts:
    drive: str
    native_mb_per_s: float
    max_block_kb: int
    cartridge_native_gb: float | None  # None: the paper does not state it
    notes: str


def _read(name: str) -> list[dict[str, str]]:
    text = resources.files("tape_planning").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


@cache
def cells() -> tuple[Cell, ...]:
    """All 864 measured cells, in the paper's order."""
    return tuple(
        Cell(
            r["drive"],
            int(r["data_buffers"]),
            int(r["buffer_size_kb"]),
            r["file_size"],
            r["compressibility"],
            r["encrypted"] == "true",
            float(r["mb_per_s"]),
        )
        for r in _read("drive-characterization.csv")
    )


@cache
def facts() -> dict[str, DriveFacts]:
    return {
        r["drive"]: DriveFacts(
            r["drive"],
            float(r["native_mb_per_s"]),
            int(r["max_block_kb"]),
            float(r["cartridge_native_gb"]) if r["cartridge_native_gb"] else None,
            r["notes"],
        )
        for r in _read("drive-facts.csv")
        if r["drive"] in DRIVES
    }


@cache
def _index() -> dict[tuple[str, int, int, str, str, bool], float]:
    return {
        (c.drive, c.data_buffers, c.buffer_size_kb, c.file_size, c.compressibility, c.encrypted): c.mb_per_s
        for c in cells()
    }


def drive_named(text: str) -> str:
    """The drive's key for what a user typed ("lto4", "HP LTO-4", "t10000b")."""
    wanted = str(text).upper().replace("-", "").replace(" ", "").removeprefix("HP").removeprefix("STK")
    for drive in DRIVES:
        if wanted == drive:
            return drive
    raise PlanError(
        "drive",
        f"{str(text).strip() or 'nothing'!r} was not measured; the paper measured {', '.join(DRIVES)}",
    )


def buffer_sizes(drive: str) -> list[int]:
    return sorted({c.buffer_size_kb for c in cells() if c.drive == drive})


def workloads(drive: str) -> list[Workload]:
    """The drive's measured rows, in the paper's order."""
    seen = dict.fromkeys(Workload(c.file_size, c.compressibility) for c in cells() if c.drive == drive)
    return list(seen)


def measured(
    drive: str, data_buffers: int, buffer_size_kb: int, workload: Workload, encrypted: bool
) -> float:
    """The figure printed in the paper for exactly this cell; :class:`PlanError` if there is none."""
    key = (drive, data_buffers, buffer_size_kb, workload.file_size, workload.compressibility, encrypted)
    try:
        return _index()[key]
    except KeyError:
        raise PlanError(
            "setting",
            f"{drive} was not measured with {data_buffers} buffers of {buffer_size_kb} KB on "
            f"{workload}; measured buffer sizes: {', '.join(f'{s} KB' for s in buffer_sizes(drive))}",
        ) from None


def nearest_workloads(drive: str, file_size_bytes: int, ratio: float) -> list[Workload]:
    """The measured rows nearest the asked-for one: the measured compressibilities either side of
    ``ratio`` (or equal to it), and for each the measured file sizes either side of the size."""
    rows = workloads(drive)
    nearest: list[Workload] = []
    for r in _either_side(sorted({w.ratio for w in rows}), ratio):
        sizes = sorted({w.file_size_bytes for w in rows if w.ratio == r})
        for size in _either_side(sizes, file_size_bytes):
            nearest += [w for w in rows if w.ratio == r and w.file_size_bytes == size]
    return nearest


def _either_side(values: Sequence[float], x: float) -> list[float]:
    if x in values:
        return [x]
    below = [v for v in values if v < x]
    above = [v for v in values if v > x]
    return ([below[-1]] if below else []) + ([above[0]] if above else [])
