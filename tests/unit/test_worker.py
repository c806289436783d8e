"""The one way a KMA runs a background job (kma/worker.py): a round at start, the next one when
woken, a failed round reported in the log and retried, and a stop that leaves no thread behind."""

from __future__ import annotations

import logging
import threading

import pytest

from kma.worker import Worker
from tests.support.waiting import wait_until

HOUR = 3600.0  # a pause no test waits out: only `wake` and `stop` end it


class Counter(Worker):
    name = "test-counter"
    pause_s = HOUR

    def __init__(self, fail_at: int = 0, wake: threading.Event | None = None) -> None:
        super().__init__(wake)
        self.rounds = 0
        self.woken_rounds = 0
        self.fail_at = fail_at

    def work(self) -> float:
        self.rounds += 1
        self.woken_rounds += self.woken
        if self.rounds == self.fail_at:
            raise RuntimeError("the disk is gone")
        return HOUR


def worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == Counter.name]


def test_a_worker_works_at_start_again_when_woken_and_its_stop_leaves_no_thread() -> None:
    worker = Counter()
    worker.start()
    try:
        wait_until(lambda: worker.rounds == 1, 10, what="the first round, at start")
        worker.wake()
        wait_until(lambda: worker.rounds == 2, 10, what="a round when woken")
        assert worker.woken_rounds == 1
    finally:
        worker.stop()
    assert not worker_threads()
    assert worker.rounds == 2  # stopping does not run a round


def test_a_failed_round_is_reported_and_the_worker_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    worker = Counter(fail_at=1)
    with caplog.at_level(logging.ERROR, logger=__name__):
        worker.start()
        try:
            wait_until(lambda: caplog.records, 10, what="the failure in the log")
            worker.wake()
            wait_until(lambda: worker.rounds == 2, 10, what="the round after the failed one")
        finally:
            worker.stop()
    assert "test-counter" in caplog.records[0].getMessage()
    assert caplog.records[0].exc_info and "the disk is gone" in str(caplog.records[0].exc_info[1])


def test_a_worker_is_woken_by_the_event_it_shares() -> None:
    """The audit pruner wakes when a Security Officer changes the retention schedule."""
    changed = threading.Event()
    worker = Counter(wake=changed)
    worker.start()
    try:
        wait_until(lambda: worker.rounds == 1, 10, what="the first round")
        changed.set()
        wait_until(lambda: worker.rounds == 2, 10, what="a round once the event is set")
    finally:
        worker.stop()


def test_a_worker_never_started_stops_at_once() -> None:
    Counter().stop()
