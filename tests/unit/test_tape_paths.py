"""The path planner reproduces each paper's published results (papers in shared/seeds, lines cited)."""

from __future__ import annotations

import re

import pytest

from tape_planning import PlanError
from tape_planning.advice import checklist, restore, settings, streaming
from tape_planning.archive import archive_rate
from tape_planning.path import PathRequest, drives_for_window, make_path
from tape_planning.path_report import path_text, stage_rows

ULTRIUM960_ARRAY = {
    "drive": "ULTRIUM960",
    "disk": "measured",
    "disk_mb_s": "262.24",
    "application": "dataprotector",
}


def stage(path, kind):
    return next(s for s in path.stages if s.kind == kind)


# -- paper 000: TSM settings beside NetBackup's, and the measured cells preferred ---------------
def test_000_tsm_client_and_server_settings_with_their_lines():
    lines = " ".join(settings(make_path(PathRequest(application="tsm"))))
    assert "TXNBytelimit 2097152, RESOURCEUTILIZATION 8 (paper 000, lines 663-668)" in lines
    assert "TXNGroupmax 256, MOVESizethresh 2048, MOVEBatchsize 1000 (paper 000, lines 682-688)" in lines
    assert "(paper 003, line 160" in lines  # 003: both at their maximum


def test_000_measured_drive_uses_its_best_measured_cell():
    # T10000, 1GB files ~2:1: the highest encrypted figure of the paper's tables is 2 MB x 8 buffers' row
    path = make_path(PathRequest(drive="T10000", data_type="2:1", disk="measured", disk_mb_s="1000"))
    tape = stage(path, "Tape")
    assert tape.rate == pytest.approx(310.0, abs=2) and "line 1090: measured" in tape.source
    assert path.bottleneck is tape


# -- paper 001: compression per drive on the same data, and the 80/20 mix -----------------------
def test_001_same_data_compresses_1_3_on_lto3_and_2_1_on_dlt_s4():
    lto3 = make_path(PathRequest(drive="LTO3", disk="measured", disk_mb_s="263"))
    dlt = make_path(PathRequest(drive="DLTS4", disk="measured", disk_mb_s="263"))
    assert round(stage(lto3, "Tape").rate / lto3.drive.native_mb_per_s, 1) == 1.3  # 98 / 76
    assert round(stage(dlt, "Tape").rate / dlt.drive.native_mb_per_s, 1) == 2.1  # 127 / 61
    # "completes a 10GB backup 30% more quickly" (line 19)
    assert round(lto3.hours / dlt.hours - 1, 1) == 0.3


def test_001_the_80_20_mix_and_incompressible_data():
    typical = make_path(PathRequest(drive="LTO9"))
    assert typical.compression.ratio == pytest.approx(1 / (0.8 / 2 + 0.2))  # 1.67:1
    assert "paper 001, line 24" in typical.compression.source
    flat = make_path(PathRequest(drive="LTO9", data_type="incompressible"))
    assert stage(flat, "Tape").rate == 400  # the drive turns compression off: native, never below
    assert any("paper 001, line 28" in n for n in flat.compression.notes)


# -- paper 002: the bottleneck tables -----------------------------------------------------------
def test_002_table_3_gigabit_ethernet_is_the_bottleneck():
    path = make_path(PathRequest(**ULTRIUM960_ARRAY, network="gige"))
    assert path.bottleneck.kind == "Network" and path.rate == 108.29  # Table 3, test 5 (Windows)
    row = next(r for r in stage_rows(path) if r[2] != "No")
    assert row[2] == "Yes (Network)" and row[3] == "paper 002, line 1218"


def test_002_table_1_local_backup_is_tape_bound():
    path = make_path(PathRequest(**ULTRIUM960_ARRAY))
    assert path.bottleneck.kind == "Tape" and path.rate == 154  # Table 1, test 1: Yes (Tape)
    assert streaming(path).streaming


def test_002_table_2_small_files_and_table_6_their_restore():
    path = make_path(PathRequest(**ULTRIUM960_ARRAY, files="small", concurrency=4))
    assert stage(path, "File System").rate == 29.02  # Table 2, test 3 (parallel read)
    assert path.rate == pytest.approx(22.98)  # Table 2, test 5: Data Protector's catalogue work
    assert path.bottleneck.kind == "File System"  # as Table 2 marks it
    assert "3.38 MB/s, as measured (paper 002, line 1355)" in " ".join(restore(path))


def test_002_software_compression_crc_and_buffer_memory():
    path = make_path(PathRequest(**ULTRIUM960_ARRAY, software_compression=True, crc=True))
    assert path.bottleneck.kind == "Server" and path.bottleneck.rate == 46  # 156 -> 46 MB/s
    assert path.rate == pytest.approx(46 * 0.8)  # CRC: about -20%
    assert path.compression.ratio == 1 and "never" not in path.compression.notes[0]
    assert "4 x 8 x 256 KB = 8 MB (paper 002, line 1968)" in " ".join(
        settings(make_path(PathRequest(**ULTRIUM960_ARRAY, concurrency=4)))
    )


# -- paper 003: sizing, the LAN, LAN-free -------------------------------------------------------
def test_003_two_tb_in_four_hours_at_20_mb_s_needs_6_9_drives():
    path = make_path(
        PathRequest(drive="LTO1", drives=7, data="2TB", window="4h", disk="measured", disk_mb_s="140")
    )
    assert round(drives_for_window(path), 1) == 6.9


def test_003_100mb_lan_and_the_first_lto_at_2_to_1():
    path = make_path(PathRequest(drive="LTO1", network="100mb", data_type="2:1"))
    assert path.bottleneck.kind == "Network" and path.rate == 5  # 5-6 MB/s
    assert stage(path, "Tape").rate == 30  # 15 MB/s native, 30 with 2:1
    assert not streaming(path).streaming


def test_003_lan_free_small_files_lose_a_quarter_to_a_third():
    path = make_path(
        PathRequest(files="small", network="san", lan_free=True, application="tsm", disk_mb_s="2000")
    )
    assert stage(path, "Application").rate == pytest.approx(10.59 * 0.7)
    with pytest.raises(PlanError, match="LAN-free backups run over the SAN"):
        make_path(PathRequest(lan_free=True, network="gige"))


# -- paper 004: the archive path ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("size", "per", "op", "mb", "objects", "line"),
    [
        ("1MB", 500, "archive", 84, 84, "151"),
        ("8KB", 500, "archive", 24, 3000, "167"),
        ("1MB", 500, "retrieve", 79, 79, "224"),
        ("8KB", 25, "archive", 3.96, 495, "215"),
    ],
)
def test_004_archive_and_retrieve_rates(size, per, op, mb, objects, line):
    rate = archive_rate(size, per, op)
    assert rate.exact and rate.mb_per_s == pytest.approx(mb) and rate.objects_per_s == pytest.approx(objects)
    assert rate.source == f"paper 004, line {line}"


# -- today's drives, the slow-backup checklist, and citations -----------------------------------
def test_todays_drives_are_makers_figures_and_shoe_shine_behind_a_slow_disk():
    path = make_path(PathRequest(drive="LTO7", disk="single", data_type="incompressible"))
    assert path.drive.makers_figure and "maker's figure" in stage(path, "Tape").source
    assert stage(path, "Tape").rate == 300  # native: the LTO-7 does not compress incompressible data
    words = " ".join(streaming(path).lines)
    assert "below the LTO-7 (Ultrium 7)'s lowest streaming rate of 101.46 MB/s" in words
    assert "shoe-shines" in words and "paper 002, lines 511-520" in words
    # a drive whose minimum is not recorded says so rather than guess one
    older = " ".join(streaming(make_path(PathRequest(drive="LTO6", disk="single"))).lines)
    assert "lowest streaming rate is not in the planner's data" in older


def test_a_measured_rate_in_line_with_the_path_says_so():
    path = make_path(PathRequest(**ULTRIUM960_ARRAY, network="gige", measured_mb_s="100"))
    assert "in line" in checklist(path)[0] and "paper 003, line 194" in checklist(path)[0]


@pytest.mark.parametrize(
    "drive", ["LTO5", "LTO9", "TS1160", "T10000D", "LTO4", "T9840D", "ULTRIUM960", "DLTS4"]
)
def test_every_stage_names_its_source(drive):
    path = make_path(PathRequest(drive=drive, network="gige", files="small", application="dataprotector"))
    for row in stage_rows(path):
        assert re.search(
            r"paper 00\d, (.*, )?lines? \d|maker's figure|your measurement|no network|give no figure", row[3]
        )
    assert "bench/" not in path_text(path)
