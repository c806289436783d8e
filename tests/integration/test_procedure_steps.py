"""An operator's first-day procedures (join, enrolment, new cluster, restore, serve) are lists of
named steps (kma/steps.py): when one fails, its error names the step and the KMA's log says it, so
"how far did it get?" has an answer. What the user is told stays the refusal's own message.

Each test makes one step fail for a reason met in real life, against a real data directory (a demo
KMA's, stopped) or a real `kma serve` process.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.appliance import Appliance
from kma.backup.fileformat import BadBackup
from kma.cluster import join
from kma.cluster.store import open_store
from kma.datadir import DataDir
from kma.errors import Conflict, Unauthenticated
from kma.services import enrollment
from kma.setup import new_cluster
from kma.setup.answers import parse_answers
from kma.setup.restore import restore
from kma.steps import failed_step, step
from tests.support.first_setup import ONE_KMA_ANSWERS
from tests.support.kma_process import RunningKma, run_kma


def test_a_failing_step_is_named_once_by_the_innermost_step(caplog: pytest.LogCaptureFixture) -> None:
    @step("demo")
    def _outer_step() -> None:
        _inner_step()

    @step("demo")
    def _inner_step() -> None:
        raise ValueError("the disk is full")

    with caplog.at_level(logging.WARNING, "kma.steps"), pytest.raises(ValueError) as caught:
        _outer_step()
    assert str(caught.value) == "the disk is full"  # what the user reads is unchanged
    assert failed_step(caught.value) == "inner step"
    assert caught.value.__notes__ == ["demo failed at step 'inner step'"]
    assert [r.getMessage() for r in caplog.records] == ["demo failed at step 'inner step': the disk is full"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    demo = RunningKma.demo_in(tmp_path_factory.mktemp("steps"), test_clock=False)
    demo.stop()
    return demo.data_dir


@pytest.fixture
def kma(data_dir: Path) -> Iterator[Appliance]:
    kma = Appliance(DataDir(data_dir), open_store)
    try:
        yield kma
    finally:
        kma.close()


def test_a_join_with_a_wrong_passphrase_fails_at_the_passphrase_check(kma: Appliance) -> None:
    with pytest.raises(Unauthenticated) as caught:
        join.join(kma, "kma-nowhere", "not the passphrase", "", "", "192.0.2.7")
    assert failed_step(caught.value) == "check the kma passphrase"
    assert "join failed at step 'check the kma passphrase'" in caught.value.__notes__


def test_an_enrolment_with_a_wrong_passphrase_fails_at_the_passphrase_check(kma: Appliance) -> None:
    with pytest.raises(Unauthenticated) as caught:
        enrollment.enroll(kma, "no-such-agent", "not the passphrase", b"", "192.0.2.7", "127.0.0.1:5696")
    assert failed_step(caught.value) == "check the enrollment passphrase"


def test_a_new_cluster_in_a_directory_holding_a_kma_fails_at_checking_the_answers(data_dir: Path) -> None:
    answers = parse_answers(ONE_KMA_ANSWERS.format(key_pool_size=5))
    with pytest.raises(Conflict) as caught:
        new_cluster.initialise(DataDir(data_dir), answers)
    assert failed_step(caught.value) == "check the answers"
    assert (data_dir / "kma.db").exists()  # and the KMA there is untouched


def test_a_restore_from_files_that_are_no_backups_fails_at_checking_the_pair(tmp_path: Path) -> None:
    database, core = tmp_path / "db.kmsbak", tmp_path / "core.kmscore"
    database.write_bytes(b"not a backup")
    core.write_bytes(b"not a backup either")
    target = DataDir(tmp_path / "restored")
    with pytest.raises(BadBackup) as caught:
        restore(target, database, core, [])
    assert failed_step(caught.value) == "check the backup pair"
    assert not target.root.exists() or target.is_empty()


def test_serve_on_a_taken_port_names_the_listeners_step_in_its_log(data_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = run_kma("serve", "--data-dir", str(data_dir), "--management-port", port, check=False)
    assert done.returncode != 0
    assert "serve failed at step 'open the listeners'" in done.stdout + done.stderr
