"""The refusal throttle: at most N refusals a second one by one, the rest in one summary that
says how many, from which addresses and in which second (issue 10, finding 6)."""

from __future__ import annotations

import time

from kma.services.refusals import RefusalThrottle


def start_of_a_second() -> None:
    """So that the admissions below all fall in one second (they take microseconds)."""
    while time.time() % 1 > 0.5:
        time.sleep(0.01)


def test_beyond_the_rate_refusals_are_counted_by_address_and_summarised_once_the_second_is_over() -> None:
    throttle = RefusalThrottle("api.throttled", "refused requests without a valid session", per_second=3)
    start_of_a_second()
    admitted = [throttle.admit("10.0.9.9:40000")[0] for _ in range(8)]
    admitted += [throttle.admit("[2001:db8::5]:41000")[0] for _ in range(2)]
    assert admitted.count(True) == 3
    assert throttle.flush() is None  # the second is not over: nothing to say yet
    time.sleep(1.0)
    summary = throttle.flush()
    assert summary is not None and summary.operation == "api.throttled"
    assert summary.message.startswith("7 more refused requests without a valid session in the second from ")
    assert "5 from 10.0.9.9, 2 from 2001:db8::5" in summary.message
    assert throttle.flush() is None  # reported once


def test_nothing_dropped_means_no_summary() -> None:
    throttle = RefusalThrottle("service.throttled", "refusals of unknown peers", per_second=3)
    start_of_a_second()
    assert [throttle.admit("10.0.0.1:1")[0] for _ in range(3)] == [True, True, True]
    time.sleep(1.0)
    assert throttle.flush() is None
