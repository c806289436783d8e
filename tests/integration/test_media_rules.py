"""The white paper's media rules, enforced by a real KMA over KMIP (docs/media.md): a write key for
a tape of a never-encrypted pool is refused; an LTO-7 drive may not append to a tape an LTO-8
drive wrote but may write it from BOT; a tape whose keys were all destroyed is relabelled before
reuse; a pool bound to a key group keeps its tapes' keys there; a volser of no pool follows the
cluster's setting. Simulated drives are enrolled agents speaking KMIP over mutual TLS."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kma.kmip.client import KmipClient, KmipFailure
from kma.kmip.enums import ResultReason
from kms_client import KmsClient
from tests.support.agents import enroll, events, key_row, kmip, last_event, new_passphrase, service_address
from tests.support.kma_process import RunningKma, run_kma
from tests.support.kma_process import read_only_db as db


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    running = RunningKma.demo_in(tmp_path_factory.mktemp("media"))
    try:
        so = running.client("so")
        so.create_media_pool("plain", "N*", never_encrypted=True, description="Non-encrypting drives")
        so.create_media_pool("dallas", "E00000-E49999", key_group_id="backup-dallas")
        so.create_media_pool("archive", "A*", key_group_id="archive")
        yield running
    finally:
        running.stop()


def drive(kma: RunningKma, tmp: Path, agent_id: str, generation: str) -> KmipClient:
    """A new tape drive of `generation` in Dallas (key group backup-dallas), enrolled, connected."""
    op = kma.client("op")
    op.create_agent(agent_id, "dallas", "backup-dallas", f"{generation} drive")
    op.update_agent(
        agent_id, drive_generation=generation, drive_model=f"HP Ultrium {generation}", library="SL3000"
    )
    enroll(kma, agent_id, tmp / agent_id, new_passphrase(kma, agent_id))
    return kmip(tmp / agent_id)


@pytest.fixture(scope="module")
def drives(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, KmipClient]]:
    tmp = tmp_path_factory.mktemp("drives")
    made = {g: drive(kma, tmp, f"lto{g[-1]}-dal", g) for g in ("LTO-7", "LTO-8")}
    yield made
    for client in made.values():
        client.close()


def refused(call: Any, *args: str) -> str:
    with pytest.raises(KmipFailure) as failure:
        call(*args)
    assert failure.value.reason == ResultReason.PERMISSION_DENIED
    return failure.value.message


def writer(kma: RunningKma, volser: str) -> str | None:
    with db(kma) as conn:
        return conn.execute("SELECT writer_generation FROM data_units WHERE id = ?", (volser,)).fetchone()[0]


def test_a_write_key_for_a_tape_of_a_never_encrypted_pool_is_refused_and_audited(
    kma: RunningKma, drives: dict[str, KmipClient]
) -> None:
    before = last_event(kma)
    message = refused(drives["LTO-8"].write_key, "N00001")
    assert "media pool 'plain', which is never encrypted" in message
    said = [e for e in events(kma, before) if e["operation"] == "kmip.write_key"]
    assert said and said[0]["condition"] == "error" and "never encrypted" in said[0]["message"]
    assert kma.client("auditor").get_media_refusals().never_encrypted >= 1
    # no key was given to the plain tape
    assert kma.client("op").list_data_units(search="N00001").total == 0


def test_an_older_drive_may_not_append_to_a_newer_drives_tape_but_may_write_it_from_bot(
    kma: RunningKma, drives: dict[str, KmipClient]
) -> None:
    so = kma.client("so")
    # Given a tape an LTO-8 drive wrote first
    key, issued = drives["LTO-8"].write_key("E10001")
    assert issued and writer(kma, "E10001") == "LTO-8"
    # When the generation rule only warns, an LTO-7 drive is served, and a warning is recorded
    before = last_event(kma)
    assert drives["LTO-7"].write_key("E10001") == (key, False)
    warned = [e for e in events(kma, before) if e["operation"] == "kmip.media_warning"]
    assert warned and "neither read nor append" in warned[0]["message"]
    # When it refuses, the LTO-7 drive's append is refused, saying what to do
    so.update_media_settings(generation_rule="refuse")
    try:
        message = refused(drives["LTO-7"].write_key, "E10001")
        assert "LTO-7 drive can neither read nor append to a tape written by a newer LTO-8" in message
        assert "write it from BOT" in message
        # and a write from BOT is allowed: the tape is the LTO-7 drive's from now on
        new_key, released = drives["LTO-7"].write_from_beginning("E10001")
        assert new_key != key and released == 1 and writer(kma, "E10001") == "LTO-7"
        # the newer drive reads it but cannot append to it
        message = refused(drives["LTO-8"].write_key, "E10001")
        assert "LTO-8 drive reads a tape written by a LTO-7 drive but cannot append" in message
        # an LTO-7 drive cannot write an LTO-8 cartridge at all (its barcode's media suffix)
        message = refused(drives["LTO-7"].write_from_beginning, "E20001L8")
        assert "cannot write the LTO-8 cartridge 'E20001L8'" in message
    finally:
        so.update_media_settings(generation_rule="warn")
    assert kma.client("auditor").get_media_refusals().generation >= 3


def test_a_tape_whose_keys_were_all_destroyed_is_relabelled_before_reuse(
    kma: RunningKma, drives: dict[str, KmipClient]
) -> None:
    auditor = kma.client("auditor")
    # The demo destroyed E00001's only key: the tape is on the relabel list, in its pool
    listed = {t.id: t for t in auditor.list_tapes_to_relabel().items}
    assert listed["E00001"].pool_id == "dallas"
    # An append to it is refused; a write from BOT (overwrite existing labels) is its reuse
    message = refused(drives["LTO-8"].write_key, "E00001")
    assert "relabel it (write from BOT, overwrite existing labels) before it is reused" in message
    key, _ = drives["LTO-8"].write_from_beginning("E00001")
    assert key_row(kma, key)["data_unit_id"] == "E00001"
    assert "E00001" not in {t.id for t in auditor.list_tapes_to_relabel().items}


def test_a_pool_keeps_its_tapes_keys_in_its_key_group_and_names_itself_when_refusing(
    kma: RunningKma, drives: dict[str, KmipClient]
) -> None:
    # the Dallas pool's tape gets its key in backup-dallas, the drive's own group
    key, _ = drives["LTO-8"].write_key("E10002")
    assert key_row(kma, key)["key_group_id"] == "backup-dallas"
    # the archive pool's key group is not the drive's: refused with the pool named
    message = refused(drives["LTO-8"].write_key, "A10001")
    assert "media pool 'archive', whose keys are in key group 'archive'" in message
    # and a drive naming another group for a pool's tape is refused too
    message = refused(drives["LTO-8"].write_key, "E10003", "backup-boston")
    assert "media pool 'dallas'" in message


def test_a_volser_of_no_pool_follows_the_cluster_setting(
    kma: RunningKma, drives: dict[str, KmipClient]
) -> None:
    so = kma.client("so")
    assert drives["LTO-8"].write_key("Z10001")[1]  # serve (the default)
    so.update_media_settings(unmatched="refuse")
    try:
        assert "volser 'Z10002' is in no media pool" in refused(drives["LTO-8"].write_key, "Z10002")
    finally:
        so.update_media_settings(unmatched="serve")


def test_the_migration_view_counts_what_each_generation_can_do_with_a_pools_tapes(
    kma: RunningKma, drives: dict[str, KmipClient]
) -> None:
    drives["LTO-8"].write_key("E10010")
    drives["LTO-7"].write_key("E10011")
    view = kma.client("op").get_media_pool_migration("dallas")
    rows = {g.generation: g for g in view.generations}
    written = {w.generation: w.tapes for w in view.written_by}
    assert rows["LTO-8"].append == written["LTO-8"]
    assert rows["LTO-8"].read_only == written["LTO-7"]
    assert rows["LTO-7"].rewrite_from_bot == written["LTO-8"]
    # retiring the LTO-8 drives would leave its tapes unreadable (no other drive reads them)
    assert rows["LTO-8"].unreadable_without == written["LTO-8"]
    assert view.tapes == kma.client("so").get_media_pool("dallas").tapes


def test_pools_and_drives_are_checked_as_they_are_entered(kma: RunningKma) -> None:
    so, op = kma.client("so"), kma.client("op")
    with pytest.raises(Exception, match="range's two volsers have one length"):
        so.create_media_pool("bad", "E000-E99999")
    with pytest.raises(Exception, match="never encrypted has no key group"):
        so.create_media_pool("bad", "Q*", never_encrypted=True, key_group_id="archive")
    with pytest.raises(Exception, match="is not a drive generation"):
        op.update_agent("t10k-dal-01", drive_generation="LTO-10")
    assert op.list_agents(drive_generation="LTO-7").total == 1
    assert isinstance(op, KmsClient)


def test_data_units_show_and_filter_by_their_pool_and_writer(
    kma: RunningKma, drives: dict[str, KmipClient]
) -> None:
    drives["LTO-8"].write_from_beginning("E10020")
    op = kma.client("op")
    unit = op.get_data_unit("E10020")
    assert (unit.pool_id, unit.writer_generation) == ("dallas", "LTO-8")
    in_pool = {u.id for u in op.iter_data_units(pool_id="dallas", writer_generation="LTO-8")}
    assert "E10020" in in_pool and all(u.startswith("E") for u in in_pool)
    assert "A00001" in {u.id for u in op.iter_data_units(pool_id="archive")}
    assert op.get_data_unit("Z10001").pool_id is None
    # a plain tape seen in the encrypted pool's range: registered, never given a key
    op.create_data_unit("E10040", "seen in the library, never written encrypted")
    assert "E10040" in {u.id for u in op.iter_data_units(pool_id="dallas", state="no_key")}


def test_a_site_with_one_kma_is_warned_and_its_drives_are_counted_per_kma(
    kma: RunningKma, drives: dict[str, KmipClient]
) -> None:
    drives["LTO-8"].write_key("E10030")
    sites = {s.id: s for s in kma.client("auditor").get_topology().sites}
    dallas, boston = sites["dallas"], sites["boston"]
    assert any("has one KMA for its" in w and "at least two KMAs per site" in w for w in dallas.warnings)
    assert any("has no KMA of its own" in w for w in boston.warnings)
    me = kma.client("so").get_status().kma_id
    assert dallas.drives_by_kma[me] >= 2  # the two simulated drives, served by this one KMA
    # What losing Dallas leaves behind: its library, and the Dallas pool, whose key group's drives
    # are all there; a drive of that group in Boston (a disaster recovery site) answers it
    assert "SL3000" in dallas.libraries and "dallas" in dallas.pools_only_here
    lost = "Losing site Dallas leaves media pool"
    assert any(w.startswith(lost) and " dallas" in w for w in dallas.warnings)
    op = kma.client("op")
    op.create_agent("lto8-bos-dr", "boston", "backup-dallas", library="SL8500")
    try:
        sites = {s.id: s for s in kma.client("auditor").get_topology().sites}
        assert "dallas" not in sites["dallas"].pools_only_here
        assert "SL8500" in sites["boston"].libraries
    finally:
        op.update_agent("lto8-bos-dr", enabled=False)


def test_a_drive_says_what_it_is_when_it_enrols(kma: RunningKma, tmp_path: Path) -> None:
    op = kma.client("op")
    op.create_agent("lto9-dal", "dallas", "backup-dallas")
    base = ["agent", "enroll", "--kma", service_address(kma), "--agent-id", "lto9-dal"]
    secret = tmp_path / "passphrase"
    secret.write_text(new_passphrase(kma, "lto9-dal") + "\n")
    files = [
        "--passphrase-file",
        str(secret),
        "--out",
        str(tmp_path / "drive"),
        "--ca-fingerprint",
        kma.fingerprint,
    ]
    # A generation the KMA does not know is refused, saying which it knows; the passphrase still works
    wrong = run_kma(*base, *files, "--drive-generation", "LTO-10", check=False)
    assert wrong.returncode != 0 and "is not a drive generation; known: LTO-5" in wrong.stderr
    told = ["--drive-generation", "LTO-9", "--drive-model", "IBM TS2290", "--library", "SL8500"]
    assert run_kma(*base, *files, *told, check=False).returncode == 0
    agent = op.get_agent("lto9-dal")
    assert (agent.drive_generation, agent.drive_model, agent.library) == ("LTO-9", "IBM TS2290", "SL8500")


def test_tapes_that_moved_between_pools_are_listed_and_reported_signed(
    kma: RunningKma, drives: dict[str, KmipClient], tmp_path: Path
) -> None:
    """A tape written while no pool held its volser, then a pool drawn over it bound to another key
    group; a plain pool drawn over a tape that has a key: both are listed as moved, and the signed
    media report carries them beside the tapes to relabel."""
    so = kma.client("so")
    drives["LTO-8"].write_key("M10001")  # backup-dallas, the drive's group: no pool holds M*
    drives["LTO-8"].write_key("P10001")
    drives["LTO-8"].write_key("M20001")
    so.create_media_pool("boston-m", "M10000-M19999", key_group_id="backup-boston")
    so.create_media_pool("plain-p", "P*", never_encrypted=True)
    so.create_media_pool("dallas-m", "M20000-M29999", key_group_id="backup-dallas")
    try:
        op = kma.client("op")
        moved = {t.id: t for t in op.iter_all(op.list_tapes_moved_between_pools)}
        # (the demo's tapes written under other groups than the Dallas pool's are there too)
        assert {"M10001", "P10001"} <= set(moved) and "M20001" not in moved  # its pool keeps its group
        m = moved["M10001"]
        assert (m.pool_id, m.pool_key_group_id, m.writer_generation) == ("boston-m", "backup-boston", "LTO-8")
        assert list(m.key_groups) == ["backup-dallas"]
        assert (moved["P10001"].pool_id, moved["P10001"].pool_key_group_id) == ("plain-p", None)
        assert [t.id for t in op.list_tapes_moved_between_pools(search="M1").items] == ["M10001"]

        report = op.get_media_report()
        rows = list(csv.DictReader(io.StringIO(report.csv)))
        lists = {(r["list"], r["volser"]) for r in rows}
        assert {("moved_between_pools", "M10001"), ("moved_between_pools", "P10001")} <= lists
        assert ("relabel", "E00002") in lists  # the demo's shredded tape, never written again
        assert report.filename.startswith("media-report-")
        path, sig, ca = tmp_path / report.filename, tmp_path / f"{report.filename}.sig", tmp_path / "ca.pem"
        path.write_text(report.csv)
        sig.write_text(report.signature)
        ca.write_text(kma.ca_pem)
        checked = run_kma("audit", "verify", "--export", str(path), "--signature", str(sig), "--ca", str(ca))
        assert "Export verified (media.csv)" in checked.stdout
        assert events(kma, 0, "report.media")
    finally:
        for pool in ("boston-m", "plain-p", "dallas-m"):
            so.delete_media_pool(pool)
    assert not {"M10001", "P10001"} & {t.id for t in op.iter_all(op.list_tapes_moved_between_pools)}
