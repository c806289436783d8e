"""A node's rqlited restarting (kma/store/rqlite_http.py Restarts): it stops only once the requests
already sent to it are answered, and requests made meanwhile wait until it is back. A request cut
mid-way by the stop could have been applied or not: its user could not be told which."""

from __future__ import annotations

import threading
import time

from kma.store.rqlite_http import Restarts


def test_a_restart_waits_for_the_request_in_flight_and_later_requests_wait_for_the_restart() -> None:
    restarts = Restarts()
    answered = threading.Event()
    events: list[str] = []

    def a_request_in_flight() -> None:
        with restarts.sending("node:4001"):
            time.sleep(0.3)
            events.append("answered")
            answered.set()

    first = threading.Thread(target=a_request_in_flight)
    first.start()
    time.sleep(0.05)
    restarts.begin("node:4001")  # returns once the request in flight is answered
    events.append("stopping")

    def a_later_request() -> None:
        with restarts.sending("node:4001"):
            events.append("sent after the restart")

    later = threading.Thread(target=a_later_request)
    later.start()
    time.sleep(0.2)
    events.append("back")
    restarts.end("node:4001")
    first.join()
    later.join()
    assert events == ["answered", "stopping", "back", "sent after the restart"]


def test_another_nodes_requests_do_not_wait_for_a_restart() -> None:
    restarts = Restarts()
    restarts.begin("node-a:4001")
    started = time.monotonic()
    with restarts.sending("node-b:4001"):
        pass
    assert time.monotonic() - started < 1.0
