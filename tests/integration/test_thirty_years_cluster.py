"""Thirty years of a small cluster (issue 38): two KMAs on rqlite share one test clock that moves
through 30 years while their certificates live and die on the real clock in a minute or two. The
first KMA takes a database backup on its schedule every day of the clock (so once a jump); drives
write a tape every year through either KMA and read the tape of year 0 through both, while each
KMA renews its listener and node certificates again and again (every node re-pinning the other's),
the master key rotates twice (every KMA taking each generation), the CA's certificate is renewed
by a quorum and the drives renew theirs under it. At the end both KMAs serve the year-0 key with
its first bytes; the scheduled backup of year 3 restores with the core security backup of its
generation and opens nothing of year 30 with it; both KMAs' audit chains verify."""

from __future__ import annotations

from pathlib import Path

import pytest

from kms_client import KmsClient, Trust
from tests.integration.test_backups import quorum, refused, restores
from tests.integration.test_certificate_lifecycle import write_settings
from tests.integration.test_quorum import creds
from tests.support.agents import enroll, kmip, new_passphrase, service_address
from tests.support.cluster import add_node, first_node, replica
from tests.support.kma_process import RunningKma, read_only_db, run_kma
from tests.support.waiting import wait_until

DAY = 86400
YEAR = 365 * DAY
DRIVES = (
    "t10k-dal-01",
    "t10k-dal-02",
)  # the first enrolled through the first KMA, the second through the other
MEMBERS = ("alice", "bob", "carol")
# Real-clock lives: a KMA's certificates last 60 s and are renewed 40 s before their end (each
# node renewal has every member's rqlited re-pin it, so not too often); agents' as long as the CA's.
SHORT = {"kma_validity": "60s", "renew_before": "40s", "agent_validity": "10y"}

pytestmark = pytest.mark.slow  # the real clock: certificates expire inside the test


def so(kma: RunningKma) -> KmsClient:
    return kma.client("so")  # signed in afresh: a session does not outlive a jump of a year


def generation_everywhere(kmas: list[RunningKma], generation: int) -> None:
    """Until the rotation to `generation` has ended: every KMA took it, the old one destroyed."""
    officers = [so(k) for k in kmas]  # one client each: a KMA holds 64 manager connections at most
    wait_until(
        lambda: (
            all(o.get_status().master_key_generation == generation for o in officers)
            and not officers[0].get_master_key().rotating
        ),
        180,
        what=f"master key generation {generation} on every KMA",
        interval=0.5,
    )


def scheduled_backups(backup: KmsClient) -> list[str]:
    return [b.id for b in backup.list_backups().items if b.scheduled]


def audited(kma: RunningKma, operation: str, entity_id: str) -> int:
    """How many `operation` events the cluster's audit trail holds by or about `entity_id`."""
    with replica(kma) as db:
        sql = "SELECT count(*) FROM audit_events WHERE operation = ? AND ? IN (entity_id, subject_id)"
        return int(db.execute(sql, (operation, entity_id)).fetchone()[0])


def test_a_cluster_lives_thirty_years_with_scheduled_backups_renewals_and_rotations(tmp_path: Path) -> None:
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    second.clock_file = first.clock_file  # one clock for the cluster, as one wall clock would be
    kmas = [first, second]
    try:
        for kma in kmas:
            write_settings(kma, **SHORT)
        second.start()
        co = first.client("co")
        co.create_key_policy("vault-35y", encryption_period=YEAR, cryptoperiod=35 * YEAR)
        co.create_key_group("vault", "vault-35y")
        co.set_key_group_agents("vault", list(DRIVES))
        drives = [tmp_path / name for name in DRIVES]
        for kma, name, folder in zip(kmas, DRIVES, drives, strict=True):
            enroll(kma, name, folder, new_passphrase(kma, name))
        keep, backups = tmp_path / "scheduled", tmp_path / "backups"
        keep.mkdir()
        backups.mkdir()
        so(first).take_core_security_backup(backups / "gen1.kmacore")  # scheduled backups wait for one
        first.client("backup").set_backup_schedule("daily", str(keep), keep=40)
        backup = first.client("backup")
        wait_until(lambda: len(scheduled_backups(backup)) == 1, 60, what="the first scheduled backup")

        # Year 0: a tape written through the first KMA
        with kmip(drives[0], service_address(first)) as client:
            tape_key, _ = client.write_key("V00000", "vault")
            tape_bytes = client.get(tape_key)
        year3 = ""
        for year in range(1, 31):
            first.advance_clock(YEAR)  # the file both KMAs read
            backup.close()  # a KMA holds 64 manager connections at most
            backup = first.client("backup")  # signed in afresh: a session does not outlive a year
            wait_until(
                lambda n=year + 1, b=backup: len(scheduled_backups(b)) == n,
                60,
                what=f"year {year}'s scheduled backup",
            )
            if year == 3:
                year3 = scheduled_backups(backup)[0]  # newest first
            if year in (8, 21):
                so(second).rotate_master_key(credentials=creds(second, *MEMBERS))
                generation = 2 if year == 8 else 3
                generation_everywhere(kmas, generation)
                # Scheduled backups wait for a core security backup of the new generation
                so(first).take_core_security_backup(backups / f"gen{generation}.kmacore")
            if year == 12:
                before = Trust.fetch(first.address).ca_pem
                write_settings(first, **SHORT, ca_validity="20y")
                write_settings(second, **SHORT, ca_validity="20y")
                assert so(first).renew_cluster_ca(credentials=creds(first, *MEMBERS)).state == "executed"
                wait_until(
                    lambda old=before: all(Trust.fetch(k.address).ca_pem != old for k in kmas),
                    60,
                    what="the new CA",
                )
            if year % 5 == 0 or year == 13:  # the drives renew theirs (and take the new CA)
                for folder in drives:
                    done = run_kma("agent", "renew", "--agent-dir", str(folder), "--now")
                    assert done.returncode == 0, done.stderr
            writer = kmas[year % 2]
            with kmip(drives[year % 2], service_address(writer)) as client:  # a real handshake
                client.write_key(f"V{year:05d}", "vault")
            for kma in kmas:
                with kmip(drives[0], service_address(kma)) as client:
                    assert client.get(tape_key) == tape_bytes

        # Year 30: the schedule made one backup a year (kept 40); each KMA renewed its certificates
        # several times; every KMA is at generation 3; drives read the year-0 key through both
        assert len(scheduled_backups(backup)) == 31
        assert {p.name for p in keep.iterdir()} == {f"{b}.kmabackup" for b in scheduled_backups(backup)}
        assert all(audited(first, "kma.certificate_renew", k) >= 2 for k in ("kma-dal-1", "kma-dal-2"))
        for kma in kmas:
            assert so(kma).get_status().master_key_generation == 3
            for folder in drives:
                with kmip(folder, service_address(kma)) as client:
                    assert client.get(tape_key) == tape_bytes
        assert audited(first, "agent.renew", DRIVES[0]) == 7
        # Year 3's scheduled backup restores with year 1's core security backup (its generation),
        # the year-0 tape's key in it; with year 30's core security backup it is refused, and so is
        # year 30's newest backup with year 1's core security backup (two rotations came between)
        members = quorum(first)
        restores(tmp_path / "restored", backups / "gen1.kmacore", keep / f"{year3}.kmabackup", members)
        with read_only_db(tmp_path / "restored" / "kma" / "kma.db") as db:
            assert db.execute("SELECT 1 FROM keys WHERE id = ?", (tape_key,)).fetchone()
        newest = keep / f"{scheduled_backups(backup)[0]}.kmabackup"
        assert "master key rotation" in refused(
            tmp_path / "old-core", backups / "gen1.kmacore", newest, members
        )
        for kma in kmas:
            verified = run_kma("audit", "verify", "--data-dir", str(kma.data_dir), check=False)
            assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        second.stop()
        first.stop()
