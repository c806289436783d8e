"""The backup data path, stage by stage: why a backup runs at the rate it does.

The user describes the path once (source disk and files, network, backup server, application,
drives); each stage gets the rate the papers give it, with the figure's paper and line, and the
slowest stage is named the bottleneck the way paper 002's tables do ("Yes (Network)"). A stage the
papers give no figure for is shown without a rate and never invented. Drives come from
:mod:`tape_planning.drives` (papers' measurements first, makers' figures otherwise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tape_planning import drives as catalogue
from tape_planning.figures import NO_FIGURE, figure, value
from tape_planning.units import PlanError, parse_ratio, parse_size, parse_streams, parse_window

DATA_TYPES = ("typical", "database", "media", "incompressible")  # or "N:1"
FILE_MIXES = ("large", "typical", "small")
SYSTEMS = ("windows", "unix")
DISKS = ("array", "single", "busy", "measured")
NETWORKS = ("none", "100mb", "gige", "10gige", "san")
APPLICATIONS = ("generic", "netbackup", "tsm", "dataprotector")
APPLICATION_NAMES = {
    "generic": "a generic backup application",
    "netbackup": "NetBackup",
    "tsm": "Tivoli Storage Manager",
    "dataprotector": "HP Data Protector",
}
TEN_GBE_RATED_MB_S = 1250.0  # 10 Gb/s / 8 bits: the link's rated rate, not a measurement
FC_MB_S_PER_GBIT = 100.0  # paper 003 line 117: a 1 Gb Fibre Channel path is a 100 MB/s path


@dataclass(frozen=True)
class PathRequest:
    """The path as typed: ``kma plan`` flags or the Planning area's fields."""

    drive: str = "LTO8"
    drives: int | str = 1
    data: str = "20TB"
    window: str = "8h"
    data_type: str = "typical"
    files: str = "typical"
    system: str = "windows"
    disk: str = "array"
    disk_mb_s: str = "400"
    network: str = "none"
    san_gbit: str = "8"
    lan_free: bool = False
    application: str = "generic"
    concurrency: int | str = 1
    software_compression: bool = False
    crc: bool = False
    bus_mb_s: str = ""
    measured_mb_s: str = ""


@dataclass(frozen=True)
class Stage:
    """One part of the path: its rate in MB/s (None: no limit the papers put a figure on)."""

    name: str
    kind: str  # as paper 002 names bottlenecks: Disk, File System, Network, Server, Application, Tape
    rate: float | None
    source: str
    detail: str = ""


@dataclass(frozen=True)
class Compression:
    ratio: float  # what the drive achieves on the data, as planned
    source: str
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Path:
    request: PathRequest
    drive: catalogue.PathDrive
    drive_count: int
    data_bytes: int
    window_s: float
    concurrency: int
    compression: Compression
    stages: tuple[Stage, ...]
    bottleneck: Stage
    crc_factor: float  # 1.0, or what CRC checking leaves of the rate
    rate: float  # MB/s the whole path sustains
    measured: float | None  # what the user's backup runs at today

    @property
    def feed_per_drive(self) -> float:
        """MB/s the stages before the drives hand each drive."""
        upstream = [s.rate for s in self.stages if s.kind != "Tape" and s.rate is not None]
        return min(upstream, default=float("inf")) / self.drive_count

    @property
    def hours(self) -> float:
        return self.data_bytes / 1e6 / self.rate / 3600


def _choice(text: str, allowed: tuple[str, ...], field: str) -> str:
    wanted = str(text).strip().lower().replace("-", "").replace(" ", "")
    for item in allowed:
        if wanted == item:
            return item
    raise PlanError(field, f"{str(text).strip() or 'nothing'!r} is not one of {', '.join(allowed)}")


def _rate(text: str, field: str, required: bool) -> float | None:
    if not str(text).strip():
        if required:
            raise PlanError(field, "type a rate in MB/s, e.g. 400")
        return None
    try:
        rate = float(str(text).strip().removesuffix("MB/s").strip())
    except ValueError:
        raise PlanError(
            field, f"{str(text).strip()!r} is not a rate; type MB/s as a number, e.g. 400"
        ) from None
    if rate <= 0:
        raise PlanError(field, f"{rate:g} must be more than zero")
    return rate


def compression(data_type: str, software: bool) -> Compression:
    """The ratio the drive gets: data type presets (003, 001's 80/20 mix) or a typed N:1."""
    notes: list[str] = []
    text = str(data_type).strip().lower()
    if text[:1].isdigit():
        ratio, source = parse_ratio(text, "compressibility"), "your figure"
    else:
        kind = _choice(text, DATA_TYPES, "data type")
        ratio, source = _PRESETS[kind]()
    if software:
        notes.append(
            "Software compression is on and the drive compresses too: the drive gets compressed data "
            "(planned at 1:1), the backup is slower and the ratio no better "
            f"({figure('never_compress_twice').source})."
        )
        ratio = 1.0
    notes.append(
        "The same data compresses differently on different drives: "
        f"{value('lto3_effective_ratio'):g}:1 on an LTO-3 against {value('dlts4_effective_ratio'):g}:1 on a "
        f"DLT-S4 ({figure('lto3_effective_ratio').source}); test with your own data."
    )
    if ratio <= 1:
        notes.append(
            "Drives turn compression off for data that does not compress, so they write at their native "
            f"rate rather than below it ({figure('compression_off_inline').source})."
        )
    return Compression(ratio, source, tuple(notes))


def _mix() -> tuple[float, str]:
    share, ratio = value("mix_compressible_share"), value("mix_compressible_ratio")
    effective = 1 / (share / ratio + (1 - share))
    return effective, (
        f"{share:.0%} of the data at {ratio:g}:1 and {1 - share:.0%} incompressible = {effective:.2f}:1 "
        f"({figure('mix_compressible_share').source}; real file sets averaged "
        f"{value('real_data_ratio_low'):g}-{value('real_data_ratio_high'):g}:1 there)"
    )


_PRESETS: dict[str, Callable[[], tuple[float, str]]] = {
    "typical": _mix,
    "database": lambda: (value("database_ratio"), f"databases, {figure('database_ratio').source}"),
    "media": lambda: (value("media_ratio"), f"video, audio, images, {figure('media_ratio').source}"),
    "incompressible": lambda: (1.0, "incompressible data (1:1)"),
}


def make_path(request: PathRequest) -> Path:
    """The path's stages and bottleneck; :class:`PlanError` names the field of any bad input."""
    drive = catalogue.path_drive(request.drive)
    count = parse_streams(request.drives, "drives")
    concurrency = parse_streams(request.concurrency, "concurrency")
    system = _choice(request.system, SYSTEMS, "system")
    files = _choice(request.files, FILE_MIXES, "files")
    application = _choice(request.application, APPLICATIONS, "application")
    network = _choice(request.network, NETWORKS, "network")
    if request.lan_free and network != "san":
        raise PlanError("network", "LAN-free backups run over the SAN: choose san, or clear LAN-free")
    packing = compression(request.data_type, bool(request.software_compression))
    disk = _disk_stage(request)
    stages = [
        disk,
        _file_system_stage(files, system, concurrency, disk.rate),
        _network_stage(network, request.san_gbit),
        _server_stage(request),
    ]
    stages.append(_application_stage(application, files, bool(request.lan_free), stages[1].rate))
    write = drive.write_rate(packing.ratio)
    stages.append(
        Stage(
            f"{count} x {drive.name}",
            "Tape",
            write.rate * count,
            write.source,
            f"{write.rate:,.1f} MB/s a drive" + (f"; {write.note}" if write.note else ""),
        )
    )
    limited = [s for s in stages if s.rate is not None]
    bottleneck = min(limited, key=lambda s: s.rate or 0.0)
    crc = 1 - value("crc_cost") if request.crc else 1.0
    return Path(
        request=request,
        drive=drive,
        drive_count=count,
        data_bytes=parse_size(request.data, "data"),
        window_s=parse_window(request.window, "window"),
        concurrency=concurrency,
        compression=packing,
        stages=tuple(stages),
        bottleneck=bottleneck,
        crc_factor=crc,
        rate=(bottleneck.rate or 0.0) * crc,
        measured=_rate(request.measured_mb_s, "measured rate", required=False),
    )


def _disk_stage(request: PathRequest) -> Stage:
    kind = _choice(request.disk, DISKS, "disk")
    if kind == "single":
        return Stage(
            "Source disk: one spindle", "Disk", value("single_spindle"), figure("single_spindle").source
        )
    if kind == "busy":
        f = figure("busy_spindle")
        return Stage("Source disk: one spindle, busy", "Disk", value("busy_spindle"), f.source)
    rate = _rate(request.disk_mb_s, "disk rate", required=True)
    assert rate is not None
    if kind == "measured":
        return Stage("Source disk: measured read rate", "Disk", rate, "your measurement")
    share = value("array_rule")
    return Stage(
        "Source disk: array",
        "Disk",
        rate * share,
        figure("array_rule").source,
        f"{share:.0%} of its rated {rate:,.0f} MB/s (the 50% rule)",
    )


_SMALL_READ = {  # (system, parallel) -> the paper's measured small-file read rate
    ("windows", False): "small_read_single_windows",
    ("windows", True): "small_read_parallel_windows",
    ("unix", False): "small_read_single_unix",
    ("unix", True): "small_read_parallel_unix",
}


def _file_system_stage(files: str, system: str, concurrency: int, disk_rate: float | None) -> Stage:
    if files != "small":
        single, parallel = figure("typical_read_single_windows"), figure("typical_read_parallel_windows")
        note = "no limit below the disk's rate"
        if concurrency == 1:  # 002, Table 1's recommendation: one stream cannot fully use the drive
            note += (
                f"; but one stream read {single.value:g} MB/s where parallel streams read {parallel.value:g} "
                f"on the same array ({single.source}; {parallel.source}): measure yours"
            )
        return Stage(f"File system: {files} files", "File System", None, NO_FIGURE, note)
    measured = figure(_SMALL_READ[(system, concurrency > 1)])
    seeking = value("small_file_seek_low")
    by_seeks = (disk_rate or float("inf")) * (1 - seeking)
    streams = "parallel streams" if concurrency > 1 else "one stream"
    if measured.value is not None and measured.value <= by_seeks:
        return Stage(
            f"File system: millions of small files, {streams}",
            "File System",
            measured.value,
            measured.source,
            "as measured on a fast array; " + _seek_words(seeking),
        )
    return Stage(
        f"File system: millions of small files, {streams}",
        "File System",
        by_seeks,
        figure("small_file_seek_low").source,
        _seek_words(seeking) + f"; the disk reads data {1 - seeking:.0%} of the time",
    )


def _seek_words(seeking: float) -> str:
    high = value("small_file_seek_high")
    return f"a disk backing up small files spends {seeking:.0%}-{high:.0%} of its time seeking"


def _network_stage(network: str, san_gbit: str) -> Stage:
    if network == "none":
        return Stage("Network: none (local backup)", "Network", None, "no network in the path")
    if network == "100mb":
        return Stage(
            "Network: 100 Mb Ethernet",
            "Network",
            value("lan_100mb"),
            figure("lan_100mb").source,
            "tops out at 5-6 MB/s",
        )
    if network == "gige":
        f = figure("gige_measured_windows")
        return Stage(
            "Network: Gigabit Ethernet",
            "Network",
            f.value,
            f.source,
            f"measured 108.29-111.84 MB/s; stated limit {value('gige_rated'):g} MB/s "
            f"({figure('gige_rated').source})",
        )
    share = value("path_share_low")
    if network == "10gige":
        return Stage(
            "Network: 10 Gigabit Ethernet",
            "Network",
            TEN_GBE_RATED_MB_S * share,
            figure("path_share_low").source,
            f"no paper measured 10 GbE: {share:.0%} of its rated {TEN_GBE_RATED_MB_S:,.0f} MB/s",
        )
    gbit = _rate(san_gbit, "SAN speed", required=True)
    assert gbit is not None
    rated = gbit * FC_MB_S_PER_GBIT
    return Stage(
        f"Network: SAN, {gbit:g} Gb Fibre Channel",
        "Network",
        rated * share,
        figure("path_share_low").source,
        f"{share:.0%} of its rated {rated:,.0f} MB/s",
    )


def _server_stage(request: PathRequest) -> Stage:
    limits: list[tuple[float, str, str]] = []
    bus = _rate(request.bus_mb_s, "bus", required=False)
    if bus is not None:
        rule = value("pci_rule")
        limits.append((bus / rule, figure("pci_rule").source, f"half of the {bus:,.0f} MB/s bus"))
    if request.software_compression:
        f = figure("sw_compression_on")
        limits.append(
            (value("sw_compression_on"), f.source, "software compression: 156 -> 46 MB/s at 99% CPU")
        )
    if not limits:
        return Stage("Backup server", "Server", None, NO_FIGURE, "no bus or compression limit given")
    rate, source, detail = min(limits)
    return Stage("Backup server", "Server", rate, source, detail)


def _application_stage(application: str, files: str, lan_free: bool, file_rate: float | None) -> Stage:
    name = f"Application: {APPLICATION_NAMES[application]}"
    if files == "small" and file_rate is not None and application == "dataprotector":
        share = value("dp_small_windows") / value("small_read_parallel_windows")
        return Stage(  # 002's Table 2 marks this the file system's doing: "Yes (File System)"
            name + ", cataloguing millions of files",
            "File System",
            file_rate * share,
            figure("dp_small_windows").source,
            f"{share:.0%} of the file system's read rate",
        )
    if files == "small" and file_rate is not None and application == "tsm" and lan_free:
        loss = value("lanfree_small")
        return Stage(
            name + ", LAN-free",
            "Application",
            file_rate * (1 + loss),
            figure("lanfree_small").source,
            f"storage agent handshaking: {loss:.0%} for small files",
        )
    return Stage(name, "Application", None, NO_FIGURE, "no slowdown the papers measured for this case")


def drives_for_window(path: Path) -> float:
    """Paper 003's sizing: data an hour / one drive's sustained rate an hour (6.9 in its example)."""
    per_hour = path.data_bytes / 1e6 / (path.window_s / 3600)
    per_drive = min(path.rate / path.drive_count, path.drive.write_rate(path.compression.ratio).rate)
    return per_hour / (per_drive * 3600)
