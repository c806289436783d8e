"""A tape's history keeps its old keys: after Write From Beginning the data unit's history shows
each released key's lane and the release, and the released key's own history still names its
tape (over a real KMA, with a real drive enrolled over KMIP)."""

from __future__ import annotations

from pathlib import Path

from tests.support.agents import demo_passphrase, enroll, kmip
from tests.support.kma_process import RunningKma


def test_a_tape_written_from_beginning_keeps_its_old_keys_in_its_history(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "drive", demo_passphrase(fresh_kma, "t10k-dal-02"))
    with kmip(tmp_path / "drive") as drive:
        first, _ = drive.write_key("E50001")
        fresh_kma.advance_clock(3600)
        second, released = drive.write_from_beginning("E50001")
    assert released == 1

    auditor = fresh_kma.client("auditor")
    tape = auditor.data_unit_history("E50001")
    assert [lane.subject_id for lane in tape.lanes] == ["E50001", first, second]
    assert tape.lanes[1].label == f"Key {first} (released)"
    (release,) = [b for b in tape.boundaries if b.kind == "released"]
    assert release.by == "t10k-dal-02" and release.lane == 1
    assert "let go of data unit E50001 (written from beginning of tape)" in release.label
    assert tape.facts["keys"] == 1 and tape.facts["released_keys"] == 1
    assert any(e.subject_id == first and e.operation == "kmip.write_key" for e in tape.events)

    key = auditor.key_history(first)
    assert "issued for data unit E50001" in (key.lanes[0].spans[1].note or "")
    assert "None" not in (key.lanes[0].spans[1].note or "")
    assert key.facts["data_unit_id"] is None and key.facts["released_from"] == "E50001"
    assert [b.kind for b in key.boundaries if b.kind == "released"] == ["released"]
