"""The refusal throttle: at most N refusals a second one by one, the rest in one summary that
says how many, from which addresses and in which second (issue 10, finding 6)."""

from __future__ import annotations

from kma.services.refusals import RefusalThrottle


class Clock:
    """The throttle's clock, moved by the test: its seconds are what the throttle counts in."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.25

    def __call__(self) -> float:
        return self.now


def test_beyond_the_rate_refusals_are_counted_by_address_and_summarised_once_the_second_is_over() -> None:
    clock = Clock()
    throttle = RefusalThrottle(
        "api.throttled", "refused requests without a valid session", per_second=3, now=clock
    )
    admitted = [throttle.admit("10.0.9.9:40000")[0] for _ in range(8)]
    admitted += [throttle.admit("[2001:db8::5]:41000")[0] for _ in range(2)]
    assert admitted.count(True) == 3
    assert throttle.flush() is None  # the second is not over: nothing to say yet
    clock.now += 1.0
    summary = throttle.flush()
    assert summary is not None and summary.operation == "api.throttled"
    assert summary.message.startswith("7 more refused requests without a valid session in the second from ")
    assert "5 from 10.0.9.9, 2 from 2001:db8::5" in summary.message
    assert throttle.flush() is None  # reported once


def test_nothing_dropped_means_no_summary() -> None:
    clock = Clock()
    throttle = RefusalThrottle("service.throttled", "refusals of unknown peers", per_second=3, now=clock)
    assert [throttle.admit("10.0.0.1:1")[0] for _ in range(3)] == [True, True, True]
    clock.now += 1.0
    assert throttle.flush() is None
