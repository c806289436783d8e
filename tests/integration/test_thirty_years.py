"""Thirty years on a clock (issue 38): a real KMA whose own dates move through 30 years (the test
clock) while its certificates live and die on the real clock in seconds (short validities), and a
drive works throughout: it writes tapes every year and reads the tape written in year 0 with the
same bytes at the end, after its certificate was renewed several times, the KMA's renewed itself
again and again, the cluster CA rolled over (by a quorum, then by itself), the master key was
rotated twice (the second time in a key split change's ceremony) and a general key policy's
rotation period made a successor every five years; the backups of year 3 restore together and
their core security backup opens nothing of year 30's, as docs/backups.md says; the audit chain
verifies end to end."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kma.kmip.client import KmipClient
from kms_client import KmsClient, Trust
from tests.integration.test_backups import cli, quorum, refused, restores
from tests.integration.test_ca_rollover import served_other_than
from tests.integration.test_certificate_lifecycle import write_settings
from tests.integration.test_key_split_change import NAMES, enrol_all
from tests.integration.test_quorum import creds
from tests.support.agents import enroll, events, kmip, new_passphrase
from tests.support.kma_process import RunningKma, read_only_db, run_kma
from tests.support.waiting import wait_until

DAY = 86400
YEAR = 365 * DAY
DRIVE = "t10k-dal-01"  # writes and reads the vault's tapes
SERVER = "t10k-bos-01"  # a database server holding a general key that rotates every 5 years
MEMBERS = ("alice", "bob", "carol")
# Real-clock lives: a KMA's certificates last 40 s (renewed 30 s before their end), an agent's as
# long as the CA certificate it was issued under; the CA's are set as the test goes.
SHORT = {"kma_validity": "40s", "renew_before": "30s", "agent_validity": "10y"}

pytestmark = pytest.mark.slow  # the real clock: certificates expire inside the test


@contextmanager
def connected(agent_dir: Path) -> Iterator[KmipClient]:
    client = kmip(agent_dir)
    try:
        yield client
    finally:
        client.close()


def so(kma: RunningKma) -> KmsClient:
    return kma.client("so")  # signed in afresh: a session does not outlive a jump of a year


def master_key_generation(kma: RunningKma, generation: int) -> None:
    """Wait for the rotation to `generation` to end: every blob re-wrapped, the old one destroyed."""
    wait_until(
        lambda: (state := so(kma).get_master_key()).generation == generation and not state.rotating,
        120,
        what=f"master key generation {generation} in force",
        interval=0.5,
    )


def roll_the_ca(kma: RunningKma) -> tuple[str, str]:
    """A quorum renews the CA certificate for 45 s; the cluster renews that one by itself (15 s
    later) for 20 years. Both certificates."""
    before = Trust.fetch(kma.address).ca_pem
    write_settings(kma, **SHORT, ca_validity="45s", ca_renew_before="30s")
    so(kma).renew_cluster_ca(credentials=creds(kma, *MEMBERS))
    short = wait_until(lambda: served_other_than(kma, before), 30, what="the quorum's renewal")
    write_settings(kma, **SHORT, ca_validity="20y", ca_renew_before="30s")
    lasting = wait_until(lambda: served_other_than(kma, short), 60, what="the cluster's own renewal")
    return short, lasting


def rotated_keys(kma: RunningKma) -> set[str]:
    return {e["subject_id"] for e in events(kma, 0, "key.rotate")}


def renew_agent(agent_dir: Path) -> None:
    done = run_kma("agent", "renew", "--agent-dir", str(agent_dir), "--now")
    assert done.returncode == 0, done.stderr


def test_thirty_years_of_tapes_certificates_ca_master_keys_and_rotations(tmp_path: Path) -> None:
    kma = RunningKma.demo_in(tmp_path)  # with the test clock
    try:
        write_settings(kma, **SHORT)
        co, op = kma.client("co"), kma.client("op")
        co.create_key_policy("vault-35y", encryption_period=YEAR, cryptoperiod=35 * YEAR)
        co.create_key_group("vault", "vault-35y")
        co.set_key_group_agents("vault", [DRIVE])
        co.create_key_policy(
            "db-5y",
            encryption_period=6 * YEAR,
            cryptoperiod=40 * YEAR,
            general_keys=True,
            rotation_period=5 * YEAR,
        )
        co.create_key_group("databases", "db-5y")
        co.set_key_group_agents("databases", [SERVER])
        op.update_agent(SERVER, default_key_group_id="databases")
        drive, server, backups = tmp_path / "drive", tmp_path / "server", tmp_path / "backups"
        backups.mkdir()
        enroll(kma, DRIVE, drive, new_passphrase(kma, DRIVE))
        enroll(kma, SERVER, server, new_passphrase(kma, SERVER))

        # Year 0: a tape and a database key
        with connected(drive) as client:
            tape_key, _ = client.write_key("V00000", "vault")
            tape_bytes = client.get(tape_key)
        with connected(server) as client:
            db_key = client.create_and_activate(group="databases")
            db_bytes = client.get(db_key)

        ca_short = ca_lasting = ""
        for year in range(1, 31):
            kma.advance_clock(YEAR)
            if year == 3:  # the backups of year 3, kept for the years to come
                so(kma).take_core_security_backup(backups / "year3.kmacore")
                cli(kma, "backup", "backup", "create", "--out", str(backups / "year3.kmabackup"))
            if year == 8:
                kma.client("so").rotate_master_key(credentials=creds(kma, *MEMBERS))
                master_key_generation(kma, 2)
            if year == 22:  # new key split members, and the master key rotated in the same ceremony
                change = so(kma).change_key_split(
                    2, NAMES, credentials=creds(kma, *MEMBERS), rotate_master_key=True
                )
                assert enrol_all(kma, change).state == "executed"
                master_key_generation(kma, 3)
            if year == 12:
                ca_short, ca_lasting = roll_the_ca(kma)
            if year % 5 == 0:  # the database key's successor, made by the KMA in that very year
                wait_until(
                    lambda keys=year // 5 + 1: len(rotated_keys(kma)) == keys,
                    30,
                    what=f"year {year}'s rotation",
                )
            if year % 4 == 0 or year == 13:  # the drive renews its certificate (and takes the new CA)
                renew_agent(drive)
                renew_agent(server)
            with connected(drive) as client:  # a real handshake with the KMA's current certificate
                client.write_key(f"V{year:05d}", "vault")
                assert client.get(tape_key) == tape_bytes

        # Year 30: the year-0 tape's key, the same bytes; the database key and its successors
        with connected(drive) as client:
            assert client.get(tape_key) == tape_bytes
        with connected(server) as client:
            assert client.get(db_key) == db_bytes
        assert db_key in rotated_keys(kma) and len(rotated_keys(kma)) == 7  # it and 6 successors
        # The drive trusts the CA's lasting certificate; the quorum's 45 s one has expired meanwhile
        assert (drive / "ca.pem").read_text() == ca_lasting
        assert ca_short not in (kma.data_dir / "tls" / "ca.pem").read_text() or wait_until(
            lambda: ca_short not in (kma.data_dir / "tls" / "ca.pem").read_text(), 60, what="retired"
        )
        # The KMA renewed its own certificate again and again; the drive renewed its own
        assert len(events(kma, 0, "kma.certificate_renew")) >= 3
        assert len([e for e in events(kma, 0, "agent.renew") if e["subject_id"] == DRIVE]) >= 7
        assert so(kma).get_master_key().generation == 3
        # The backups of year 3 restore together (the database backup's keys open with the core
        # security backup of its generation), the year-0 tape's key in them; year 3's core security
        # backup opens nothing of year 30's database backup (two master key rotations came between)
        so(kma).take_core_security_backup(backups / "year30.kmacore")  # database backups wait for it
        cli(kma, "backup", "backup", "create", "--out", str(backups / "year30.kmabackup"))
        members = quorum(kma)
        restores(tmp_path / "restored", backups / "year3.kmacore", backups / "year3.kmabackup", members)
        with read_only_db(tmp_path / "restored" / "kma" / "kma.db") as db:
            assert db.execute("SELECT 1 FROM keys WHERE id = ?", (tape_key,)).fetchone()
        why = refused(tmp_path / "mixed", backups / "year3.kmacore", backups / "year30.kmabackup", members)
        assert "master key rotation" in why
        verified = run_kma("audit", "verify", "--data-dir", str(kma.data_dir), check=False)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        kma.stop()
