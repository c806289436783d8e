"""`kma plan`: the issue's example, its JSON form, and clear refusals (a real `python -m kma`)."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.kma_process import run_kma

EXAMPLE = [
    "plan",
    "--drive",
    "T10000",
    "--data",
    "20TB",
    "--window",
    "8h",
    "--compressibility",
    "2:1",
    "--file-size",
    "1GB",
]


def test_the_issues_example_prints_the_plan():
    result = run_kma(*EXAMPLE)
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert "SIZE_DATA_BUFFERS = 2097152 (2 MB)" in out and "NUMBER_DATA_BUFFERS = 8" in out
    assert "308.969 MB/s encrypted" in out  # T10000, 1GB ~2:1, 2 MB x 8 buffers, as printed
    assert "3 drives" in out and "KMAs per site: 2" in out and "key-service benchmark" in out
    assert "bench/" not in out  # the report cites what a reader can look up, not the project's files
    # cited as the reader's white paper names it (chapter and section), not by lines of a text dump
    assert "(Chapter 6, T10000 Tape Drive Characterization: \u201cLarge Data Buffers\u201d)" in out
    assert "lines 1082-1084" not in out and "issue 2" not in out
    # and 2:1 figures above twice the native rate are explained
    assert "above twice the drive's native 120 MB/s" in out


def test_json_is_one_object_with_the_same_plan():
    result = run_kma(*EXAMPLE, "--mixed-256k", "--streams", "4", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["touch_files"] == {"SIZE_DATA_BUFFERS": "262144", "NUMBER_DATA_BUFFERS": "16"}
    assert plan["multiplexing"] == {"streams": 4, "data_buffers": 16, "rule": "multiplexing-moderate"}
    assert plan["recommended"]["data_buffers"] == 32 and plan["key_service"]["kmas_per_site"] == 2
    assert len(plan["throughput"]) == 12
    # and the data path beside it: the default array (400 MB/s rated, 200 by 002's 50% rule) is
    # slower than the T10000's measured 309 MB/s
    assert plan["path"]["bottleneck"]["kind"] == "Disk" and plan["path"]["mb_per_s"] == 200
    assert len(plan["path"]["stages"]) == 6


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (["--drive", "T20000"], "kma plan: drive: 'T20000' is not known; known: LTO5"),
        (["--network", "wifi"], "kma plan: network: 'wifi' is not one of none, 100mb, gige"),
        (["--data", "0TB"], "kma plan: data: '0TB' must be more than zero"),
        (["--window=-8h"], "kma plan: window: '-8h' must be longer than zero"),
        (["--file-size", "1 gigabyte"], "kma plan: file size: '1 gigabyte' is not a size"),
        (["--compressibility", "2"], "kma plan: compressibility: '2' is not a ratio"),
        (["--streams", "0"], "kma plan: streams: 0 must be at least 1"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(change, says):
    result = run_kma(*EXAMPLE, *change, check=False)
    assert result.returncode == 2
    assert says in result.stderr and result.stdout == ""


def test_a_gige_bound_lto8_backup_prints_the_stage_table_with_its_bottleneck():
    # Given an LTO-8 (a maker's figure) fed over Gigabit Ethernet from a fast array, backing up at 30 MB/s
    result = run_kma(
        "plan",
        "--drive",
        "LTO8",
        "--data",
        "10TB",
        "--window",
        "8h",
        "--network",
        "gige",
        "--disk-rate",
        "500",
        "--measured-rate",
        "30",
        "--archive-object-size",
        "8KB",
    )
    out = result.stdout
    # Then the stage table names the network as paper 002 does, with its line, and says what to change
    assert re.search(r"Network: Gigabit Ethernet +108\.3 +Yes \(Network\) +paper 002, line 1218", out)
    assert "maker's figure: LTO Ultrium 8 format" in out
    # and the GigE-fed LTO-8 runs below its lowest speed-matching rate (IBM's 112 MB/s): it shoe-shines
    assert "below the LTO-8 (Ultrium 8)'s lowest streaming rate of 112 MB/s" in out
    assert "Measured 30.0 MB/s is under 70% of the 108.3 MB/s this path should give" in out
    assert "A dedicated backup LAN or a SAN path to the drives (paper 002, lines 406-408)" in out
    # and the archive path gives paper 004's 3,000 objects/s for 8 KB objects, 500 a transaction
    assert "3,000 objects/s (paper 004, line 167)" in out
    assert "Papers: 000 Sun KMS 2.0" in out and "bench/" not in out
