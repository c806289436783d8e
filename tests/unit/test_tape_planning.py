"""The planning engine answers from the white paper's measured cells, and only from them."""

from __future__ import annotations

import csv
from collections import defaultdict
from importlib import resources

import pytest

from tape_planning import PlanError, PlanRequest, drives_needed, make_plan
from tape_planning import measurements as m
from tape_planning.recommendations import ADVICE, COUNT_RULES, SIZE_RULES
from tape_planning.units import parse_size, parse_window


def shipped_csv() -> list[dict[str, str]]:
    """The package data read as plain CSV, independently of the engine's loader."""
    text = resources.files("tape_planning").joinpath("data", "drive-characterization.csv").read_text()
    return list(csv.DictReader(text.splitlines()))


def plan(drive="T10000", data="20TB", window="8h", ratio="2:1", file_size="1GB", mixed=False, streams=1):
    return make_plan(PlanRequest(drive, data, window, ratio, file_size, mixed, streams))


# -- every measured cell ------------------------------------------------------------------------
def test_every_one_of_the_864_cells_comes_back_as_measured():
    rows = shipped_csv()
    assert len(rows) == 864
    by_workload = defaultdict(list)
    for r in rows:
        by_workload[(r["drive"], r["file_size"], r["compressibility"])].append(r)
    checked = 0
    for (drive, file_size, ratio), cells in by_workload.items():
        # Given the workload of a measured row, when a plan is made for it
        p = plan(drive=drive, file_size=file_size, ratio=ratio)
        # Then it is an exact match and every cell of the row is the printed figure
        assert p.exact_match and p.notes[:1] != ["not measured"]
        pairs = {(t.buffer_size_kb, t.data_buffers): t for t in p.throughput}
        for r in cells:
            pair = pairs[(int(r["buffer_size_kb"]), int(r["data_buffers"]))]
            figure = pair.encrypted_mb_per_s if r["encrypted"] == "true" else pair.plain_mb_per_s
            assert f"{figure:.3f}" == r["mb_per_s"], r
            w = m.Workload(file_size, ratio)
            got = m.measured(
                drive, int(r["data_buffers"]), int(r["buffer_size_kb"]), w, r["encrypted"] == "true"
            )
            assert f"{got:.3f}" == r["mb_per_s"]
            checked += 1
    assert checked == 864


def test_the_shipped_data_keeps_its_provenance_and_the_t10000b_caveat():
    readme = resources.files("tape_planning").joinpath("data", "README.md").read_text()
    assert "Caveat found in the source" in readme and "T10000B" in readme
    facts = resources.files("tape_planning").joinpath("data", "drive-facts.csv").read_text()
    assert "100 bytes overhead per data buffer" in facts
    # and a T10000B plan says so to its user, marking the repeated cells
    p = plan(drive="T10000B", file_size="256KB", ratio="1:1")
    assert any("repeat the HP LTO4 figures" in n for n in p.notes)
    assert {(t.buffer_size_kb, t.data_buffers) for t in p.throughput if t.suspect} == {
        (s, n) for s in (256, 512, 2048) for n in (4, 8)
    }
    assert not any(t.suspect for t in plan(drive="T10000B", file_size="1GB").throughput)


# -- never a figure between cells ----------------------------------------------------------------
def test_an_unmeasured_file_size_shows_the_nearest_rows_and_uses_only_measured_figures():
    p = plan(drive="LTO4", file_size="100MB", ratio="2:1")
    assert not p.exact_match
    assert [str(w) for w in p.nearest] == ["1MB files, 2:1", "1GB files, 2:1"]
    assert "100 MB files, 2:1 was not measured" in p.notes[0] and "nothing is interpolated" in p.notes[0]
    assert p.workload == m.Workload("1MB", "2:1")  # the slower neighbour: on the safe side
    printed = {c.mb_per_s for c in m.cells()}
    figures = [x for t in p.throughput for x in (t.plain_mb_per_s, t.encrypted_mb_per_s)]
    assert set(figures) <= printed
    assert p.recommended.encrypted_mb_per_s in printed and p.drives.drive_mb_per_s in printed


def test_an_unmeasured_compressibility_shows_the_measured_ratios_either_side():
    p = plan(drive="T9840D", file_size="1GB", ratio="3:1")
    assert [str(w) for w in p.nearest] == ["1GB files, 2:1", "10GB files, 10:1"]
    best = {
        str(w): plan(drive="T9840D", file_size=w.file_size, ratio=w.compressibility).best_measured
        for w in p.nearest
    }
    assert best[str(p.workload)].encrypted_mb_per_s == min(b.encrypted_mb_per_s for b in best.values())


# -- the paper's recommendations -----------------------------------------------------------------
CASES = [
    # (inputs, expected recommendation keys, expected touch files (size bytes, buffers) or None)
    (dict(drive="T10000", mixed=True), {"t10000-mixed-256k", "t10000-256k-32-buffers"}, (262144, 32)),
    (
        dict(drive="T10000", file_size="1GB", ratio="2:1"),
        {
            "t10000-at-least-512k",
            "t10000-2mb-at-most-8",
            "t10000-2mb-large-files",
            "t10000-apps-256k",
            "t10000-encryption-negligible",
        },
        (2097152, 8),
    ),
    (
        dict(drive="T9840D", file_size="1GB", ratio="2:1"),
        {
            "t9840d-raise-64k",
            "t9840d-64k-16-buffers",
            "t9840d-256k-preferred",
            "t9840d-streaming",
            "t9840d-encryption-negligible",
        },
        (262144, None),
    ),
    (
        dict(drive="LTO4", mixed=True, ratio="1:1"),
        {"lto4-mixed-256k", "lto4-256k-16-uncompressible"},
        (262144, 16),
    ),
    (
        dict(drive="LTO4", mixed=True, ratio="2:1"),
        {"lto4-mixed-256k", "lto4-256k-32-compressible"},
        (262144, 32),
    ),
    (
        dict(drive="LTO4", ratio="1:1"),
        {
            "lto4-at-least-2mb",
            "lto4-uncompressible-4-threads",
            "lto4-512k-to-8mb-threads",
            "lto4-encryption-negligible",
        },
        (None, 4),
    ),
    (dict(drive="LTO4", ratio="2:1"), {"lto4-8mb-4-compressible", "lto4-2mb-16-compressible"}, None),
    (dict(drive="T10000B", mixed=True), {"t10000b-mixed-256k", "t10000b-256k-32-buffers"}, (262144, 32)),
    (
        dict(drive="T10000B", ratio="1:1", file_size="1GB"),
        {
            "t10000b-at-least-512k",
            "t10000b-2mb-4-uncompressible",
            "t10000b-2mb-large-files",
            "t10000b-encryption-negligible",
        },
        None,
    ),
    (dict(drive="T10000B", ratio="2:1", file_size="1GB"), {"t10000b-2mb-16-compressible"}, (2097152, 16)),
    (dict(streams=4), {"multiplexing-moderate", "multiplexing-separate-clients"}, (2097152, 4)),
    (dict(streams=8), {"multiplexing-heavy", "multiplexing-separate-clients"}, (2097152, 2)),
    (dict(), {"netbackup-touch-files", "encryption-after-compression"}, None),
]


@pytest.mark.parametrize(("inputs", "keys", "touch"), CASES)
def test_each_recommendation_comes_out_for_its_inputs(inputs, keys, touch):
    p = plan(**inputs)
    assert keys <= {r.key for r in p.recommendations}
    if touch is not None:
        size, buffers = touch
        if size is not None:
            assert p.touch_files["SIZE_DATA_BUFFERS"] == str(size)
        if buffers is not None:
            assert p.touch_files["NUMBER_DATA_BUFFERS"] == str(buffers)


def test_the_cases_above_cover_every_recommendation_in_the_tables():
    every = {rec.key for _sizes, rec in SIZE_RULES.values()}
    every |= {rec.key for _n, rec in COUNT_RULES.values()} | {rec.key for rec, _applies in ADVICE}
    covered = set().union(*(keys for _i, keys, _t in CASES))
    assert every == covered


def test_buffer_counts_per_size_follow_the_paper():
    counts = {s.buffer_size_kb: s.data_buffers for s in plan(drive="LTO4", ratio="2:1").settings}
    assert counts[2048] == 16 and counts[8192] == 4 and counts[256] == 32
    t9840d = {s.buffer_size_kb: s for s in plan(drive="T9840D").settings}
    assert t9840d[64].data_buffers == 16 and not t9840d[64].allowed  # shown, but raise it
    assert plan(drive="T9840D").recommended.buffer_size_kb == 256


def test_multiplexing_does_not_apply_to_a_single_stream_and_the_advice_is_absent():
    p = plan(streams=1)
    assert p.multiplexing.rule == "" and p.touch_files["NUMBER_DATA_BUFFERS"] == "8"
    assert not {"multiplexing-moderate", "multiplexing-heavy"} & {r.key for r in p.recommendations}


def test_mixed_drives_do_not_get_the_large_file_advice():
    keys = {r.key for r in plan(drive="T10000", mixed=True).recommendations}
    assert "t10000-2mb-large-files" not in keys and "t10000-at-least-512k" not in keys


# -- sizing --------------------------------------------------------------------------------------
def test_the_lto_papers_sizing_example_needs_seven_drives():
    # 20 MB/s sustained a drive; 2 TB in 4 hours = 500 GB an hour; 500 / 72 = 6.9 drives
    d = drives_needed(parse_size("2TB"), parse_window("4h"), 20.0)
    assert d.data_mb_per_hour == pytest.approx(500_000)
    assert f"{d.exact:.1f}" == "6.9" and d.needed == 7


def test_drives_cartridges_and_kmas_of_a_plan():
    p = plan(drive="LTO4", data="2TB", window="4h", ratio="1:1", file_size="1GB")
    assert p.drives.drive_mb_per_s == p.recommended.encrypted_mb_per_s
    assert (
        p.drives.needed == 2
        and f"{p.drives.exact:.2f}" == f"{500_000 / (p.drives.drive_mb_per_s * 3600):.2f}"
    )
    assert p.cartridges.native_gb == 800 and p.cartridges.needed == 3  # 2 TB / 800 GB = 2.5
    assert p.key_service.kmas_per_site == 2
    source = p.key_service.capacity_source
    assert "key-service benchmark" in source and "1,385" in source and "bench/" not in source
    compressed = plan(drive="T10000", data="20TB", ratio="2:1")
    assert (compressed.cartridges.needed, compressed.cartridges.needed_uncompressed) == (21, 41)


def test_the_t10000b_cartridge_count_says_it_is_an_upper_bound():
    c = plan(drive="T10000B").cartridges
    assert c.native_gb is None and c.needed == 21 and "upper bound" in c.note


def test_encryption_overhead_is_100_bytes_a_buffer():
    p = plan(drive="T10000", mixed=True)  # 256 KB buffers
    assert f"{p.encryption.overhead_percent:.3f}" == "0.038"
    assert p.encryption.overhead_bytes_per_buffer == 100


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("inputs", "field", "says"),
    [
        (dict(drive="T20000"), "drive", "measured T10000, T9840D, LTO4, T10000B"),
        (dict(drive=""), "drive", "was not measured"),
        (dict(data="0TB"), "data", "more than zero"),
        (dict(data="-5TB"), "data", "more than zero"),
        (dict(data="20"), "data", "not a size"),
        (dict(data="20 XB"), "data", "not a size"),
        (dict(data="twenty TB"), "data", "not a size"),
        (dict(file_size="0KB"), "file size", "more than zero"),
        (dict(file_size="1 GB!"), "file size", "not a size"),
        (dict(window="0h"), "window", "longer than zero"),
        (dict(window="-8h"), "window", "longer than zero"),
        (dict(window="8 fortnights"), "window", "not a duration"),
        (dict(window="8"), "window", "not a duration"),
        (dict(ratio="2"), "compressibility", "N:1"),
        (dict(ratio="1:2"), "compressibility", "N:1"),
        (dict(ratio="0.5:1"), "compressibility", "below 1:1"),
        (dict(streams=0), "streams", "at least 1"),
        (dict(streams="many"), "streams", "whole number"),
    ],
)
def test_bad_input_is_refused_naming_the_field(inputs, field, says):
    with pytest.raises(PlanError) as caught:
        plan(**inputs)
    assert caught.value.field == field
    assert says in str(caught.value)


def test_a_setting_that_was_not_measured_is_refused():
    with pytest.raises(PlanError, match="was not measured with 4 buffers of 64 KB"):
        m.measured("T10000", 4, 64, m.Workload("1GB", "2:1"), True)
