"""Issue 40: tapes that change hands. Two independent clusters (two `kma demo`s: each its own CA,
key split and transfer identity, real processes over TLS) register each other under quorum; 1,000
tapes a Dallas drive wrote are exported, imported at the other cluster, and that cluster's drive
reads every one by volser with the same key bytes. Every refusal writes nothing."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kma.crypto.transfer import Identity, fingerprint, parse_identity
from kma.kmip.client import KmipFailure
from kms_client import Conflict, Forbidden, PendingQuorumOp, ValidationFailed
from tests.integration.test_quorum_cli import kma_cli
from tests.support.agents import demo_passphrase, enroll, events, kmip, last_event
from tests.support.kma_process import RunningKma, read_only_db, ready_pool
from tests.support.transfer import file_from, one_tape, quorum, register, text_of, upload

DAY = 86400
TAPES = [f"T{n:05d}" for n in range(1000)]


class Sides:
    def __init__(
        self, dallas: RunningKma, offsite: RunningKma, written: dict[str, tuple[str, bytes]]
    ) -> None:
        self.dallas, self.offsite, self.written = dallas, offsite, written
        self.dallas_so, self.offsite_so = dallas.client("so"), offsite.client("so")


def _write_tapes(dallas: RunningKma, tmp: Path) -> dict[str, tuple[str, bytes]]:
    """A Dallas drive writes TAPES: volser -> (key ID, key bytes) as the drive got them."""
    ready_pool(dallas, 1100)
    enroll(dallas, "t10k-dal-01", tmp / "dal", demo_passphrase(dallas, "t10k-dal-01"))
    written = {}
    with kmip(tmp / "dal") as drive:
        for volser in TAPES:
            key_id, _ = drive.write_key(volser)
            written[volser] = (key_id, drive.get(key_id))
    return written


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sides]:
    dallas = RunningKma.demo_in(tmp_path_factory.mktemp("dallas"))
    offsite = RunningKma.demo_in(tmp_path_factory.mktemp("offsite"))
    try:
        s = Sides(dallas, offsite, _write_tapes(dallas, tmp_path_factory.mktemp("drives")))
        co = offsite.client("co")
        co.create_key_policy(
            "from-dallas", encryption_period=30 * DAY, cryptoperiod=365 * DAY, allow_import=True
        )
        co.create_key_group("from-dallas", "from-dallas", description="Tapes sent by Dallas")
        co.set_key_group_agents("from-dallas", ["t10k-dal-01"])
        yield s
    finally:
        dallas.stop()
        offsite.stop()


@pytest.fixture(scope="module")
def partnered(sides: Sides) -> Sides:
    """Each side registers the other: Dallas through a pending operation its Quorum Members approve,
    the offsite cluster at once with M credentials."""
    dallas_id = sides.dallas_so.get_transfer_identity()
    offsite_id = sides.offsite_so.get_transfer_identity()
    one = quorum(sides.dallas)[:1]
    pending = sides.dallas_so.register_transfer_partner(
        "offsite", "Offsite vault", offsite_id.identity, fingerprint=offsite_id.fingerprint, credentials=one
    )
    assert isinstance(pending, PendingQuorumOp)
    assert offsite_id.fingerprint in pending.summary  # what approvers see is what was read on the phone
    for member, passphrase in quorum(sides.dallas)[1:]:
        pending = sides.dallas.client("qm1").approve_quorum_operation(pending.id, member, passphrase)
    assert pending.state == "executed"
    register(sides.offsite_so, sides.offsite, "dallas", dallas_id.identity)
    return sides


def counts(kma: RunningKma) -> tuple[int, ...]:
    with read_only_db(kma) as db:
        return tuple(
            db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("keys", "data_units", "transfer_files", "data_unit_transfers")
        )


def test_a_partner_registered_under_quorum_shows_its_fingerprint_on_both_sides(partnered: Sides) -> None:
    offsite = partnered.dallas.client("auditor").get_transfer_partner("offsite")
    assert offsite.fingerprint == partnered.offsite_so.get_transfer_identity().fingerprint
    assert offsite.enabled and offsite.may_send and offsite.may_receive
    dallas = partnered.offsite.client("auditor").get_transfer_partner("dallas")
    assert dallas.fingerprint == partnered.dallas_so.get_transfer_identity().fingerprint
    (event,) = [e for e in events(partnered.dallas, 0) if e["subject_id"] == "offsite"]
    assert "registered transfer partner 'offsite'" in event["message"]
    assert offsite.fingerprint in event["message"]


def test_a_fingerprint_that_does_not_match_the_identity_is_refused(partnered: Sides) -> None:
    stranger = text_of(Identity.generate())
    with pytest.raises(ValidationFailed, match="do not register this identity"):
        partnered.dallas_so.register_transfer_partner(
            "stranger", "Stranger", stranger, fingerprint="0000 " * 16, credentials=quorum(partnered.dallas)
        )
    with pytest.raises(Forbidden):
        partnered.dallas.client("op").register_transfer_partner("stranger", "Stranger", stranger)


def test_1000_tapes_move_to_the_partner_and_its_drive_reads_each_with_the_same_key(
    partnered: Sides, tmp_path: Path
) -> None:
    before_dallas = last_event(partnered.dallas)
    exported = partnered.dallas.client("op").export_transfer_file(
        "offsite", volser_from=TAPES[0], volser_to=TAPES[-1]
    )
    assert (exported.data_units, exported.keys, exported.not_exported) == (1000, 1000, ())
    (event,) = events(partnered.dallas, before_dallas, "transfer.export")
    assert "exported 1000 data units" in event["message"] and "'offsite'" in event["message"]

    offsite_so = partnered.offsite_so
    preview = offsite_so.preview_transfer_import(upload(offsite_so, exported.file))
    assert (preview.partner_id, preview.data_units, preview.new, preview.conflicts) == (
        "dallas",
        1000,
        1000,
        (),
    )
    before = last_event(partnered.offsite)
    done = offsite_so.import_transfer_file(upload(offsite_so, exported.file), "from-dallas")
    assert (done.imported, done.keys_awaiting_backup) == (1000, 1000)
    first, last = events(partnered.offsite, before, "transfer.import")  # written in two batches
    assert first["condition"] == last["condition"] == "success"
    assert (
        "imported data units 1 to 500 of 1000 (500 keys) from transfer partner 'dallas'" in first["message"]
    )
    assert last["message"].endswith("the import is complete")

    enroll(
        partnered.offsite,
        "t10k-dal-01",
        tmp_path / "vault-drive",
        demo_passphrase(partnered.offsite, "t10k-dal-01"),
    )
    with kmip(tmp_path / "vault-drive") as drive:
        # An import is in a backup of this KMA before its keys are sent (the offsite KMA is alone:
        # no other KMA holds them); a drive finds the key by its tape and is told why it must wait
        key_id, _ = partnered.written[TAPES[0]]
        assert drive.locate(data_unit=TAPES[0]) == [key_id]
        with pytest.raises(KmipFailure, match="once a database backup of this KMA holds it"):
            drive.get(key_id)
        partnered.offsite.client("backup").create_backup()
        for volser in TAPES:
            key_id, material = partnered.written[volser]
            assert drive.locate(data_unit=volser) == [key_id]
            assert drive.get(key_id) == material

    unchanged = counts(partnered.offsite)
    again = offsite_so.import_transfer_file(upload(offsite_so, exported.file), "from-dallas")
    assert (again.imported, again.already_here) == (0, 1000) and again.imported_before_at is not None
    assert counts(partnered.offsite) == unchanged


def test_the_tapes_history_says_where_its_key_went_and_came_from(partnered: Sides) -> None:
    sent = partnered.dallas.client("auditor").history("data_unit", TAPES[0])
    (went,) = [b for b in sent.boundaries if b.kind == "exported"]
    assert "keys exported to partner 'offsite'" in went.label and went.by == "op"
    got = partnered.offsite.client("auditor").history("data_unit", TAPES[0])
    (came,) = [b for b in got.boundaries if b.kind == "imported"]
    assert "keys imported from partner 'dallas'" in came.label and came.by == "so"


def test_keys_whose_policy_forbids_export_stay_and_are_named(partnered: Sides) -> None:
    # A00001 is in the archive group, whose policy (archive-7y) does not allow export.
    exported = partnered.dallas.client("op").export_transfer_file(
        "offsite", volsers=["E00004", "A00001", "ZZZ"]
    )
    assert exported.data_units == 1
    assert [(x.data_unit_id, x.reason) for x in exported.not_exported] == [
        ("A00001", "the policy of key group 'archive' does not allow export")
    ]
    assert exported.not_found == ("ZZZ",)
    with pytest.raises(ValidationFailed, match="does not allow export"):
        partnered.dallas.client("op").export_transfer_file("offsite", volsers=["A00001"])


def refused(sides: Sides, file: str, error: type[Exception], reason: str, group: str = "from-dallas") -> None:
    """The import is refused with `reason`, audited, and writes nothing."""
    before, event_id = counts(sides.offsite), last_event(sides.offsite)
    with pytest.raises(error, match=reason):
        sides.offsite_so.import_transfer_file(upload(sides.offsite_so, file), group)
    assert counts(sides.offsite) == before
    (event,) = events(sides.offsite, event_id, "transfer.import")
    assert event["condition"] == "error"


def fresh_export(sides: Sides, volser: str, **kw: Any) -> str:
    """A file with `volser`'s keys; a volser not yet at Dallas is a new tape written there first."""
    op = sides.dallas.client("op")
    if not op.list_keys(data_unit_id=volser).items:
        op.create_data_unit(volser)
        op.issue_key("backup-dallas", volser)
    return sides.dallas.client("op").export_transfer_file("offsite", volsers=[volser], **kw).file


def test_an_altered_file_is_refused(partnered: Sides) -> None:
    first, chunk, trailer = fresh_export(partnered, "E00006").splitlines()  # format version 2
    altered = chunk[:40] + ("A" if chunk[40] != "A" else "B") + chunk[41:]
    refused(partnered, "\n".join([first, altered, trailer]), ValidationFailed, "altered")
    document = json.loads(first)
    document["header"]["expires_at"] += 365 * DAY
    refused(partnered, "\n".join([json.dumps(document), chunk, trailer]), ValidationFailed, "altered")
    refused(partnered, "\n".join([first, trailer]), ValidationFailed, "damaged")  # a chunk dropped
    refused(partnered, "not a transfer file", ValidationFailed, "damaged")


def test_a_file_from_an_unregistered_sender_or_for_another_cluster_is_refused(partnered: Sides) -> None:
    offsite = partnered.offsite_so.get_transfer_identity().identity
    stranger = Identity.generate()
    refused(
        partnered,
        file_from(stranger, offsite, [one_tape("S00001", os.urandom(32))]),
        ValidationFailed,
        "not a registered transfer partner",
    )
    # Dallas sends to another partner it registered; that file is brought to the offsite cluster.
    other = Identity.generate()
    register(partnered.dallas_so, partnered.dallas, "elsewhere", text_of(other))
    file = partnered.dallas.client("op").export_transfer_file("elsewhere", volsers=["E00006"]).file
    refused(partnered, file, ValidationFailed, "meant for another cluster")


def test_conflicts_disabled_partners_and_groups_without_import_are_refused(partnered: Sides) -> None:
    # E00003 exists at both clusters (two demos), each with its own key: one key, one tape.
    refused(partnered, fresh_export(partnered, "E00003"), Conflict, "E00003 exists here with another key")
    file = fresh_export(partnered, "X00001")
    refused(partnered, file, ValidationFailed, "does not allow import", group="backup-dallas")
    partnered.offsite_so.disable_transfer_partner("dallas")
    try:
        refused(partnered, file, Conflict, "disabled")
    finally:
        partnered.offsite_so.enable_transfer_partner("dallas")
    assert (
        partnered.offsite_so.import_transfer_file(upload(partnered.offsite_so, file), "from-dallas").imported
        == 1
    )


def test_the_cli_exports_previews_and_imports(partnered: Sides, tmp_path: Path) -> None:
    fresh_export(partnered, "X00003")  # the tape, written at Dallas (and a first file, not used)
    out = tmp_path / "to-offsite.kmstransfer"
    code, text, err = kma_cli(
        partnered.dallas,
        tmp_path,
        "op",
        "transfer",
        "export",
        "offsite",
        "--volser",
        "X00003",
        "--out",
        str(out),
    )
    assert code == 0 and "1 data units, 1 keys" in text, err
    code, text, err = kma_cli(partnered.offsite, tmp_path, "so", "transfer", "preview", str(out))
    assert code == 0 and "1 new" in text and "from partner dallas" in text, err
    code, text, err = kma_cli(
        partnered.offsite, tmp_path, "so", "transfer", "import", str(out), "--key-group", "from-dallas"
    )
    assert code == 0 and "Imported 1 data units" in text, err
    code, text, err = kma_cli(
        partnered.offsite, tmp_path, "so", "transfer", "import", str(out), "--key-group", "backup-dallas"
    )
    assert code != 0 and "does not allow import" in err
    code, text, err = kma_cli(partnered.offsite, tmp_path, "auditor", "transfer", "partners")
    assert code == 0 and "dallas" in text and "enabled" in text, err


def test_an_expired_file_is_refused(partnered: Sides) -> None:
    file = fresh_export(partnered, "X00002", valid_days=1)
    partnered.offsite.advance_clock(2 * DAY)
    partnered.offsite_so = partnered.offsite.client("so")  # the session before ended meanwhile
    refused(partnered, file, ValidationFailed, "expired")


def test_fingerprints_are_read_aloud_in_groups() -> None:
    identity = Identity.generate()
    text = fingerprint(parse_identity(text_of(identity)))
    assert len(text.split(" ")) == 16 and all(len(g) == 4 for g in text.split(" "))


def test_a_partner_written_into_the_store_receives_and_sends_nothing(fresh_kma: RunningKma) -> None:
    forged = Identity.generate()
    public = forged.public
    fresh_kma.stop()  # rows written with sqlite3 into a stopped KMA's store, as a leaked file allows
    db = sqlite3.connect(fresh_kma.data_dir / "kma.db")
    with db:
        db.execute(
            "INSERT INTO transfer_partners (id, name, public_identity, fingerprint, may_send, may_receive, "
            "registered_by_op, created_at, updated_at) "
            "VALUES ('mallory', 'Mallory', ?, ?, 1, 1, 'none', 0, 0)",
            (public, fingerprint(public)),
        )
    db.close()
    fresh_kma.start()
    with pytest.raises(Conflict, match="not registered through this cluster"):
        fresh_kma.client("op").export_transfer_file("mallory", volsers=["E00004"])
    here = fresh_kma.client("so").get_transfer_identity().identity
    with pytest.raises(ValidationFailed, match="not a registered transfer partner"):
        fresh_kma.client("so").preview_transfer_import(
            upload(fresh_kma.client("so"), file_from(forged, here, [one_tape("M00001", os.urandom(32))]))
        )
    assert any(
        e.subject_id == "mallory"
        for e in fresh_kma.client("auditor").iter_audit_events(operation="security.tamper")
    )
