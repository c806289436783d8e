"""Waiting for something a test cannot be told about (a file, an audit event, a background job):
poll, never a fixed sleep that is too short on a loaded machine and too long everywhere else."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float, what: str = "", *, interval: float = 0.05) -> T:
    """Call `predicate` until it returns something true, and return that; after `timeout` seconds,
    fail the test saying what did not happen."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what or 'the condition'} did not happen within {timeout:g} s")
        time.sleep(interval)
