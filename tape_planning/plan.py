"""The planning engine: a drive, a workload, a backup window -> settings, drives, cartridges, KMAs.

Every throughput figure in a plan is a measured cell of the white paper. When the asked-for file
size or compressibility was not measured, the plan shows the nearest measured rows and plans with
the slower of them (the LTO sizing paper: be conservative; do not assume files are large). The
sizing method is the LTO paper's: sustained rate decides, drives needed = data per hour / sustained
rate per drive, assuming throughput scales with the number of drives.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from tape_planning import measurements as m
from tape_planning.recommendations import (
    COUNT_RULES,
    SIZE_RULES,
    Recommendation,
    Situation,
    advice_for,
    multiplexed_buffers,
)
from tape_planning.units import (
    PlanError,
    format_ratio,
    format_size,
    format_window,
    parse_ratio,
    parse_size,
    parse_streams,
    parse_window,
)


@dataclass(frozen=True)
class KmaCapacity:
    """What one KMA was measured to serve, and where the figure comes from."""

    new_tape_keys_per_s: float
    source: str


# A write from the beginning of tape gets a new key: one KMIP Create + Activate. The figure is the
# lowest of bench/keys.py's 16-agent key-service figures (create 2,585/s, get 3,997/s).
KMA_CAPACITY = KmaCapacity(
    1385.0,
    "measured by this product's key-service benchmark: KMIP Create + Activate of a new tape key from "
    "16 agents, one KMA on a 2-core machine, 1,385 pairs/s (README, Planning)",
)
MIN_KMAS_PER_SITE = 2  # the product's rule: at least two KMAs per site, so one can fail or be serviced
SIZING_NOTES = (
    "Drives needed assumes throughput scales with the number of drives; server, bus, SAN/SCSI path "
    "and disk limits often stop it from scaling (paper 003, IBM LTO Ultrium Performance "
    "Considerations, lines 89-93). Test in place when you can.",
    "A path (SCSI, FC, LAN) sustains about 70-75% of its rated rate (paper 003, line 123); the slowest "
    "part of the backup path decides the rate (paper 002, lines 364-365): see the Data path plan.",
    "The figures are single-stream NetBackup backups from one client on hosts tuned for large "
    "sequential transfers; multiplexed throughput was not measured (Chapter 6, T10000 Tape Drive "
    "Characterization: \u201cCharacterization Data Charts\u201d).",
)


@dataclass(frozen=True)
class PlanRequest:
    """What a user asks, as typed: ``kma plan`` flags or the Planning area's fields."""

    drive: str
    data: str
    window: str
    compressibility: str
    file_size: str
    mixed_256k: bool = False
    streams: int | str = 1


@dataclass(frozen=True)
class Inputs:
    """The request read and checked."""

    drive: str
    drive_name: str
    data_bytes: int
    window_s: float
    ratio: float
    file_size_bytes: int
    mixed_256k: bool
    streams: int

    def summary(self) -> str:
        return (
            f"{self.drive_name}: {format_size(self.data_bytes)} in {format_window(self.window_s)}, "
            f"{format_size(self.file_size_bytes)} files, {format_ratio(self.ratio)}"
            + (", mixed with 256 KB-limited drives" if self.mixed_256k else "")
            + (f", {self.streams} streams a drive" if self.streams > 1 else "")
        )


@dataclass(frozen=True)
class Throughput:
    """One measured pair: the same setting without and with encryption."""

    buffer_size_kb: int
    data_buffers: int
    plain_mb_per_s: float
    encrypted_mb_per_s: float
    suspect: bool  # the encrypted figure is one of the T10000B cells repeating LTO4's


@dataclass(frozen=True)
class Setting:
    """NetBackup data buffers: a size and a count, with the measured rates and the reason."""

    buffer_size_kb: int
    data_buffers: int
    plain_mb_per_s: float
    encrypted_mb_per_s: float
    because: str  # a recommendation key, or "measured best"
    allowed: bool = True  # the paper's buffer-size rule allows this size for these inputs


@dataclass(frozen=True)
class Multiplexing:
    streams: int
    data_buffers: int  # what NUMBER_DATA_BUFFERS should say with this many streams
    rule: str  # a recommendation key, or "" without multiplexing


@dataclass(frozen=True)
class Encryption:
    overhead_bytes_per_buffer: int
    overhead_percent: float  # of each buffer at the recommended size
    measured_difference_percent: float  # encrypted vs not, at the recommended setting
    mean_difference_percent: float  # over every measured pair of the workload row
    difference_range_percent: tuple[float, float]  # the lowest and highest of them: run-to-run noise


@dataclass(frozen=True)
class Drives:
    data_mb_per_hour: float
    drive_mb_per_s: float
    exact: float  # data per hour / sustained rate per drive
    needed: int


@dataclass(frozen=True)
class Cartridges:
    native_gb: float | None
    needed: int | None  # at the stated compressibility
    needed_uncompressed: int | None  # if the data does not compress at all
    note: str = ""


@dataclass(frozen=True)
class KeyService:
    tape_mounts_per_hour: float
    kma_new_keys_per_hour: float
    load_percent: float  # of one KMA's measured capacity
    kmas_per_site: int
    capacity_source: str


@dataclass(frozen=True)
class Plan:
    inputs: Inputs
    workload: m.Workload  # the measured row the plan uses
    exact_match: bool
    nearest: list[m.Workload]  # the measured rows around the asked-for one (just the one if exact)
    throughput: list[Throughput]  # every measured cell of the workload row
    settings: list[Setting]  # per buffer size: the paper's (or measured best) buffer count
    recommended: Setting
    best_measured: Setting
    touch_files: dict[str, str]
    multiplexing: Multiplexing
    encryption: Encryption
    drives: Drives
    cartridges: Cartridges
    key_service: KeyService
    recommendations: list[Recommendation]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["workload"] = {
            "file_size": self.workload.file_size,
            "compressibility": self.workload.compressibility,
        }
        out["nearest"] = [
            {"file_size": w.file_size, "compressibility": w.compressibility} for w in self.nearest
        ]
        return out


def read_inputs(request: PlanRequest) -> Inputs:
    drive = m.drive_named(request.drive)
    return Inputs(
        drive=drive,
        drive_name=m.DRIVE_NAMES[drive],
        data_bytes=parse_size(request.data, "data"),
        window_s=parse_window(request.window, "window"),
        ratio=parse_ratio(request.compressibility, "compressibility"),
        file_size_bytes=parse_size(request.file_size, "file size"),
        mixed_256k=bool(request.mixed_256k),
        streams=parse_streams(request.streams, "streams"),
    )


def make_plan(request: PlanRequest, capacity: KmaCapacity = KMA_CAPACITY) -> Plan:
    """The plan for ``request``; :class:`PlanError` names the field of any bad input."""
    inputs = read_inputs(request)
    drive = inputs.drive
    nearest = m.nearest_workloads(drive, inputs.file_size_bytes, inputs.ratio)
    workload = min(nearest, key=lambda w: _best(drive, w).encrypted_mb_per_s)
    exact = workload.file_size_bytes == inputs.file_size_bytes and workload.ratio == inputs.ratio
    notes = [] if exact else [_not_measured_note(inputs, nearest, workload)]
    if drive == "T10000B":
        notes.append(m.T10000B_CAVEAT)

    allowed, size_rule = SIZE_RULES[(drive, inputs.mixed_256k)]
    settings = [_setting(drive, workload, size, size in allowed) for size in m.buffer_sizes(drive)]
    recommended = max((s for s in settings if s.allowed), key=lambda s: s.encrypted_mb_per_s)
    best = _best(drive, workload, allowed)
    if _pair(drive, workload, recommended.buffer_size_kb, recommended.data_buffers).suspect:
        notes.append(
            "The encrypted figure of the recommended setting is one of those repeated cells; "
            f"the T10000B's own figure without encryption is {recommended.plain_mb_per_s:.3f} MB/s."
        )
    native = m.facts()[drive].native_mb_per_s
    fastest = max(max(s.plain_mb_per_s, s.encrypted_mb_per_s) for s in settings)
    if workload.ratio == 2 and native and fastest > 2 * native:
        notes.append(
            f"Some of these 2:1 figures are above twice the drive's native {native:,.0f} MB/s (up to "
            f"{fastest:,.0f} MB/s): the rate counts data before the drive compresses it, and the paper's "
            "“compressible ~2:1” test data is approximate and compressed better than 2:1. Data that "
            f"compresses exactly 2:1 reaches at most about {2 * native:,.0f} MB/s; plan with your own "
            "data's ratio."
        )
    buffers, mux_rule = multiplexed_buffers(recommended.data_buffers, inputs.streams)
    if inputs.streams == 7:
        notes.append(
            "The paper names 2-6 streams moderate and 8 or more heavy multiplexing; "
            "7 streams are planned as heavy."
        )

    situation = Situation(drive, inputs.ratio, inputs.mixed_256k, inputs.streams, workload.file_size_bytes)
    used_counts = [
        COUNT_RULES[(drive, s.buffer_size_kb, workload.ratio > 1)][1]
        for s in settings
        if (drive, s.buffer_size_kb, workload.ratio > 1) in COUNT_RULES
    ]
    recommendations = list(dict.fromkeys([size_rule, *used_counts, *advice_for(situation)]))

    drives = drives_needed(inputs.data_bytes, inputs.window_s, recommended.encrypted_mb_per_s)
    cartridges = _cartridges(inputs, recommended.buffer_size_kb)
    mounts = max(drives.needed, cartridges.needed or 0) / (inputs.window_s / 3600)
    return Plan(
        inputs=inputs,
        workload=workload,
        exact_match=exact,
        nearest=nearest,
        throughput=[
            _pair(drive, workload, size, n) for size in m.buffer_sizes(drive) for n in m.BUFFER_COUNTS
        ],
        settings=settings,
        recommended=recommended,
        best_measured=best,
        touch_files={
            "SIZE_DATA_BUFFERS": str(recommended.buffer_size_kb * 1024),
            "NUMBER_DATA_BUFFERS": str(buffers),
        },
        multiplexing=Multiplexing(inputs.streams, buffers, mux_rule.key if mux_rule else ""),
        encryption=_encryption(drive, workload, recommended),
        drives=drives,
        cartridges=cartridges,
        key_service=key_service(mounts, capacity),
        recommendations=recommendations,
        notes=notes,
    )


def drives_needed(data_bytes: float, window_s: float, drive_mb_per_s: float) -> Drives:
    """The LTO paper's sizing: 2 TB in 4 h at 20 MB/s a drive is 500 / 72 GB an hour = 6.9: 7 drives."""
    if drive_mb_per_s <= 0:
        raise PlanError("rate", "a drive's sustained rate must be more than zero")
    per_hour = data_bytes / 1e6 / (window_s / 3600)
    exact = per_hour / (drive_mb_per_s * 3600)
    return Drives(per_hour, drive_mb_per_s, exact, max(1, math.ceil(round(exact, 9))))


def key_service(tape_mounts_per_hour: float, capacity: KmaCapacity = KMA_CAPACITY) -> KeyService:
    """Each tape written from its beginning takes one new key; KMAs per site: enough for the load,
    and never fewer than two."""
    per_hour = capacity.new_tape_keys_per_s * 3600
    return KeyService(
        tape_mounts_per_hour=tape_mounts_per_hour,
        kma_new_keys_per_hour=per_hour,
        load_percent=100 * tape_mounts_per_hour / per_hour,
        kmas_per_site=max(MIN_KMAS_PER_SITE, math.ceil(tape_mounts_per_hour / per_hour)),
        capacity_source=capacity.source,
    )


# -- helpers ------------------------------------------------------------------------------------
def _pair(drive: str, w: m.Workload, size: int, buffers: int) -> Throughput:
    encrypted = m.measured(drive, buffers, size, w, True)
    return Throughput(
        size,
        buffers,
        m.measured(drive, buffers, size, w, False),
        encrypted,
        m.Cell(drive, buffers, size, w.file_size, w.compressibility, True, encrypted).suspect,
    )


def _setting(drive: str, w: m.Workload, size: int, allowed: bool) -> Setting:
    rule = COUNT_RULES.get((drive, size, w.ratio > 1))
    if rule is None:
        best = max(m.BUFFER_COUNTS, key=lambda n: (m.measured(drive, n, size, w, True), -n))
        count, because = best, "measured best"
    else:
        count, because = rule[0], rule[1].key
    pair = _pair(drive, w, size, count)
    return Setting(size, count, pair.plain_mb_per_s, pair.encrypted_mb_per_s, because, allowed)


def _best(drive: str, w: m.Workload, sizes: tuple[int, ...] | None = None) -> Setting:
    """The highest measured encrypted figure of the row (fewest buffers on a tie)."""
    pairs = [_pair(drive, w, s, n) for s in (sizes or m.buffer_sizes(drive)) for n in m.BUFFER_COUNTS]
    top = max(pairs, key=lambda p: (p.encrypted_mb_per_s, -p.data_buffers))
    return Setting(
        top.buffer_size_kb, top.data_buffers, top.plain_mb_per_s, top.encrypted_mb_per_s, "measured best"
    )


def _not_measured_note(inputs: Inputs, nearest: list[m.Workload], used: m.Workload) -> str:
    asked = f"{format_size(inputs.file_size_bytes)} files, {format_ratio(inputs.ratio)}"
    which = "the slowest of them, to stay on the safe side" if len(nearest) > 1 else "that row"
    return (
        f"{asked} was not measured for the {inputs.drive}; nothing is interpolated. Nearest "
        f"measured: {'; '.join(str(w) for w in nearest)}. This plan uses {used}, {which}."
    )


def _encryption(drive: str, w: m.Workload, at: Setting) -> Encryption:
    pairs = [_pair(drive, w, size, n) for size in m.buffer_sizes(drive) for n in m.BUFFER_COUNTS]
    differences = [
        100 * (p.encrypted_mb_per_s - p.plain_mb_per_s) / p.plain_mb_per_s for p in pairs if not p.suspect
    ]  # the repeated LTO4 figures say nothing here
    return Encryption(
        overhead_bytes_per_buffer=m.ENCRYPTION_OVERHEAD_BYTES,
        overhead_percent=100 * m.ENCRYPTION_OVERHEAD_BYTES / (at.buffer_size_kb * 1024),
        measured_difference_percent=100 * (at.encrypted_mb_per_s - at.plain_mb_per_s) / at.plain_mb_per_s,
        mean_difference_percent=sum(differences) / len(differences),
        difference_range_percent=(min(differences), max(differences)),
    )


def _cartridges(inputs: Inputs, buffer_kb: int) -> Cartridges:
    facts = m.facts()[inputs.drive]
    grow = 1 + m.ENCRYPTION_OVERHEAD_BYTES / (buffer_kb * 1024)  # the 100 bytes a buffer reach tape too
    native_gb, note = facts.cartridge_native_gb, ""
    if native_gb is None:  # the T10000B: same media as the T10000, written denser, size not stated
        native_gb = m.facts()["T10000"].cartridge_native_gb
        note = (
            "The paper states no T10000B cartridge capacity; it writes T10000 media at a higher "
            "density, so these counts use the T10000's 500 GB and are an upper bound."
        )
    assert native_gb is not None
    per_cartridge = native_gb * 1e9

    def count(ratio: float) -> int:
        return math.ceil(round(inputs.data_bytes * grow / ratio / per_cartridge, 9))

    return Cartridges(facts.cartridge_native_gb, count(inputs.ratio), count(1.0), note)
