"""What a path plan tells the user besides its stages: what to change first, streaming, restore,
the application's settings, the slow-backup checklist. Every line cites its paper and lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from tape_planning.figures import NO_FIGURE, figure, value
from tape_planning.path import Path


def _f(key: str) -> str:
    return figure(key).source


def _disk(path: Path) -> list[str]:
    return [
        f"Read from more spindles: two smaller spindles give twice one large one ({_f('two_spindles')}).",
        f"Raise concurrency so several disks are read at once ({_f('dp_concurrency_enough')}).",
    ]


def _file_system(path: Path) -> list[str]:
    parallel = (
        "Back up in parallel streams (concurrency/multiplexing): one stream read the small files at "
        f"{value('small_read_single_windows'):g} MB/s, parallel streams at "
        f"{value('small_read_parallel_windows'):g} ({_f('small_read_parallel_windows')})."
    )
    return [
        *([parallel] if path.concurrency == 1 else []),
        f"Files mostly below 64 KB: consider an image (raw disk) backup ({_f('raw_disk_below_64k')}).",
        f"TSM: send small files to a disk storage pool and migrate them to tape ({_f('tsm_small_to_disk')}).",
        f"Or a slower drive, or backup to disk, that this source can keep streaming ({_f('slower_drive')}).",
    ]


def _network(path: Path) -> list[str]:
    if path.request.network == "100mb":
        return [f"Move to Gigabit Ethernet or LAN-free over the SAN ({_f('lan_100mb')})."]
    return [
        f"A dedicated backup LAN or a SAN path to the drives ({_f('backup_lan')}).",
        f"LAN-free: large files ran {value('lanfree_large'):.0%} faster than over GigE, small files "
        f"25-30% slower ({_f('lanfree_large')}).",
        "Software compression on the client can help a slow network, but only with the drive's "
        f"compression off ({_f('sw_compression_network')}).",
    ]


def _server(path: Path) -> list[str]:
    lines = []
    if path.request.software_compression:
        lines.append(f"Turn software compression off; let the drive compress ({_f('never_compress_twice')}).")
    if path.request.bus_mb_s:
        lines.append(
            f"Separate buses for disks and tape; the bus needs twice the backup rate ({_f('pci_rule')})."
        )
    return lines


def _application(path: Path) -> list[str]:
    if path.request.application == "tsm":
        return [f"Back small files up over the LAN, or to a disk pool first ({_f('lanfree_small')})."]
    return [f"Multiplex several file systems and raise concurrency ({_f('slower_drive')})."]


def _tape(path: Path) -> list[str]:
    return [
        f"The drives are the bottleneck: the state paper 002 aims for ({_f('tape_is_goal')}).",
        "Add drives only if the stages before them can feed them; scaling is not automatic "
        f"({_f('sizing_caveat')}).",
    ]


_REMEDIES = {
    "Disk": _disk,
    "File System": _file_system,
    "Network": _network,
    "Server": _server,
    "Application": _application,
    "Tape": _tape,
}


def change_first(path: Path) -> list[str]:
    """The bottleneck's remedies, most effective first (paper 002's method: fix the slowest stage)."""
    return _REMEDIES[path.bottleneck.kind](path)


@dataclass(frozen=True)
class Streaming:
    streaming: bool
    feed_per_drive: float
    needed: float  # MB/s a drive writes at with this data
    minimum: float | None  # the maker's lowest streaming rate, where recorded
    lines: tuple[str, ...]


def streaming(path: Path) -> Streaming:
    feed = path.feed_per_drive
    needed = path.drive.write_rate(path.compression.ratio).rate
    low = path.drive.min_streaming_mb_per_s
    if feed >= needed:
        return Streaming(True, feed, needed, low, (f"Each drive is fed {_mb(feed)} MB/s: it streams.",))
    lines = [
        f"Each drive is fed {_mb(feed)} MB/s but writes {_mb(needed)} MB/s with this data: its buffer "
        f"empties and the tape starts and stops ({_f('start_stop')}).",
    ]
    if low is not None and feed < low:
        lines.append(
            f"That is below the {path.drive.name}'s lowest streaming rate of {low:g} MB/s (maker's figure): "
            "the drive shoe-shines, wearing heads and tape, and gets slower over time "
            f"({_f('shoe_shining')})."
        )
    elif low is None:
        lines.append(
            f"The {path.drive.name}'s lowest streaming rate is not in the planner's data; below it the "
            f"drive shoe-shines ({_f('shoe_shining')}). See the drive's data sheet."
        )
    lines += [
        "Fixes: fewer drives per source; multiplex several sources onto one drive "
        f"({_f('multiplex_streaming')}); more buffers so the drive has data ready ({_f('dp_buffers')}); "
        f"stage to disk first ({_f('tsm_small_to_disk')}).",
    ]
    return Streaming(False, feed, needed, low, tuple(lines))


def restore(path: Path) -> list[str]:
    """The restore window next to the backup's, from the read and file-system-write figures."""
    r = path.request
    read = path.drive.read_rate(path.compression.ratio)
    note = f"; {read.note}" if read.note else ""
    lines = [f"Reading tape: {_mb(read.rate * path.drive_count)} MB/s ({read.source}{note})."]
    if r.files == "small":
        key = "small_restore_windows" if r.system == "windows" else "small_restore_unix"
        rate = value(key)
        lines.append(
            f"Millions of small files restore in a single stream ({_f('small_restore_single_stream')}) "
            f"at about {rate:g} MB/s, as measured ({_f(key)}): {_hours(path.data_bytes, rate)} for the data."
        )
    else:
        upstream = [s.rate for s in path.stages if s.kind in ("Network", "Disk") and s.rate is not None]
        rate = min([read.rate * path.drive_count, *upstream])
        lines.append(f"At about {_mb(rate)} MB/s the data restores in {_hours(path.data_bytes, rate)}.")
    if r.application == "netbackup" or path.concurrency > 1:
        lines.append(f"Multiplexed backups restore more slowly ({_f('mux_restore')}); {NO_FIGURE}.")
    lines.append(f"Backup times do not predict restore times: test a restore ({_f('restore_not_backup')}).")
    return lines


def settings(path: Path) -> list[str]:
    """The application's settings, each with its source."""
    app = path.request.application
    if app == "tsm":
        return [
            f"Client dsm.sys: TXNBytelimit 2097152, RESOURCEUTILIZATION 8 ({_f('tsm_client')}).",
            "Server dsmserv.sys: TXNGroupmax 256, MOVESizethresh 2048, MOVEBatchsize 1000 "
            f"({_f('tsm_server')}); "
            f"above 256 objects made little difference ({_f('tsm_groupmax_256')}).",
            f"Set TXNBytelimit and TXNGroupmax to their maximum so the drive flushes (backhitches) rarely "
            f"({_f('tsm_txn_max')}; defaults and maxima: {_f('tsm_txn_defaults')}).",
            f"Files under 100 MB: a disk storage pool, then migration to tape ({_f('tsm_small_to_disk')}).",
        ]
    if app == "dataprotector":
        block = value("dp_block_size")
        buffers = value("dp_buffers")
        memory = path.concurrency * buffers * block / 1024
        segment = (
            f"{path.drive.cartridge_native_gb * 1000 / value('dp_segments_per_tape'):,.0f} MB"
            if path.drive.cartridge_native_gb
            else "the cartridge's native capacity / 50"
        )
        return [
            f"Concurrency {path.concurrency} (default 4, 3 sufficed with SAN disks; more for slow file "
            "systems: "
            f"{_f('dp_concurrency_default')}, {_f('dp_concurrency_enough')}).",
            f"Block size {block:g} KB ({_f('dp_block_size')}); segment size {segment} "
            f"({_f('dp_segments_per_tape')}); "
            f"larger segments back up faster and restore slower ({_f('dp_segment_restore')}).",
            f"Media Agent memory = concurrency x buffers x block size = {path.concurrency} x {buffers:g} x "
            f"{block:g} KB = {memory:g} MB ({_f('dp_shared_memory')}).",
            f"Software compression off, CRC off unless you need it (-20%) "
            f"({_f('never_compress_twice')}; {_f('crc_cost')}).",
        ]
    if app == "netbackup":
        return [
            "SIZE_DATA_BUFFERS and NUMBER_DATA_BUFFERS: for the four drives paper 000 measured, `kma plan` "
            "gives the measured best; for other drives at least 256 KB buffers "
            "(paper 000, Chapter 6, T10000 Tape Drive Characterization: "
            "\u201cLab Performance Data\u201d, lines 998-1001).",
            f"Multiplexing raises backup throughput and lowers restore throughput ({_f('mux_restore')}).",
        ]
    return [
        f"Blocks of 128 KB or more ({_f('block_128k')}); small fixed blocks slow drives that adapt their "
        f"speed ({_f('small_fixed_blocks')})."
    ]


def checklist(path: Path) -> list[str]:
    """Paper 003's problem determination, led by the user's measured rate against the path's."""
    lines = []
    expected = path.rate
    if path.measured is not None:
        share = value("path_share_low")
        if path.measured >= expected * share:
            lines.append(
                f"Measured {_mb(path.measured)} MB/s against the {_mb(expected)} MB/s this path gives: "
                "in line; "
                f"the path, not a fault, sets the rate ({_f('expectation_too_high')})."
            )
        else:
            lines.append(
                f"Measured {_mb(path.measured)} MB/s is under {share:.0%} of the {_mb(expected)} MB/s "
                f"this path should give ({_f('path_share_low')}): something outside the model is slow; "
                "work down the list."
            )
    lines += [
        f"Is the configuration supported, and are OS, application, driver and microcode levels current "
        f"({_f('checklist')})?",
        "Back up one large file (200 MB to 1 GB) straight to tape: if fast, small files or the disk "
        "are the cause.",
        "Back up the large file to a disk pool: as slow as tape means the drive is not the cause.",
        "Back up without the network (client and server on one host, or LAN-free): tests the network.",
        "Write from memory to tape: takes disk, network and application out.",
        f"Then paper 002's five steps: tape write, tape read, disk write, disk read, the application "
        f"({_f('five_steps')}).",
    ]
    return lines


def _mb(rate: float) -> str:
    return f"{rate:,.1f}"


def _hours(data_bytes: float, rate: float) -> str:
    hours = data_bytes / 1e6 / rate / 3600
    return f"{hours:,.1f} h"
