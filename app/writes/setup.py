"""First set-up: the wizard's calls to a KMA in set-up mode (kma/setup/api.py).

There is no session yet, so these use the set-up client of the wizard's answers (the temporary
certificate pinned, the set-up code), not ``worker.client``; each closes its connection. They
change nothing a page shows (no page is open yet).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from app.operations import OpContext
from app.session.profiles import ConnectionProfile
from app.setup import SetupAnswers, serving_originals
from app.writes import Write
from kms_client.setup import BackupPair, SetUpKma


def _check_code(worker: OpContext, answers: SetupAnswers) -> None:
    with answers.client() as setup:
        setup.check_code()


def _check_network(worker: OpContext, answers: SetupAnswers) -> None:
    with answers.client() as setup:
        setup.check_network(answers.management_address, answers.service_address)


def _draft_key_split(worker: OpContext, answers: SetupAnswers, typed: Sequence[tuple[str, str]]) -> list[str]:
    with answers.client() as setup:
        return setup.draft_key_split(answers.threshold, typed)


def _prove(worker: OpContext, answers: SetupAnswers, typed: Sequence[tuple[str, str]]) -> str:
    with answers.client() as setup:
        return setup.prove(typed)


def _check_hsm(worker: OpContext, answers: SetupAnswers, hsm: dict[str, str]) -> list[str]:
    with answers.client() as setup:
        return setup.check_hsm(hsm, answers.kma_id)


def _finish(worker: OpContext, answers: SetupAnswers) -> SetUpKma:
    with answers.client() as setup:
        return setup.finish(answers.finish_body())


def _upload_backups(
    worker: OpContext, answers: SetupAnswers, database: Path, core: Path, known: list[ConnectionProfile]
) -> tuple[BackupPair, list[str]]:
    """Send both files and have the KMA check they belong together, before anyone types; then which
    KMAs of the backup's cluster among the ``known`` profiles still answer (the original may)."""
    with answers.client() as setup:
        setup.upload_backup("database-backup", database)
        setup.upload_backup("core-security-backup", core)
        pair = setup.check_backups(answers.autonomous_unlock, answers.hsm or None)
    return pair, serving_originals(known, pair.ca_fingerprint)


def _restore(worker: OpContext, answers: SetupAnswers, quorum: Sequence[tuple[str, str]]) -> SetUpKma:
    with answers.client() as setup:
        return setup.restore(
            answers.management_address,
            answers.service_address,
            quorum,
            answers.autonomous_unlock,
            answers.hsm or None,
        )


def _join(worker: OpContext, answers: SetupAnswers, kma: str, fingerprint: str, passphrase: str) -> SetUpKma:
    with answers.client() as setup:
        return setup.join(kma, fingerprint, answers.kma_id, passphrase, answers.hsm or None)


check_code = Write(_check_code, set())
check_network = Write(_check_network, set())
draft_key_split = Write(_draft_key_split, set())
prove = Write(_prove, set())
check_hsm = Write(_check_hsm, set())
finish = Write(_finish, set())
upload_backups = Write(_upload_backups, set())
restore = Write(_restore, set())
join = Write(_join, set())
