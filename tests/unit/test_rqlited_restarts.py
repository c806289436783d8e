"""A node's rqlited restarting (kma/store/rqlite_http.py Restarts): it stops only once the requests
already sent to it are answered, and requests made meanwhile wait until it is back. A request cut
mid-way by the stop could have been applied or not: its user could not be told which."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from kma.store.rqlite_http import Restarts
from kma.store.rqlite_replica import Replica


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


def test_a_replica_read_after_a_failed_reopen_opens_the_file_again(tmp_path: Path) -> None:
    """rqlited rebuilds its SQLite file at a restart: a read that meets it half made fails (and is
    tried again by `_settled`); the next read opens the new file, never the connection closed."""
    path = tmp_path / "db.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.commit()
    replica = Replica(path, "node:4001")
    try:
        assert replica.query("SELECT count(*) FROM t")[0][0] == 0
        path.unlink()
        path.mkdir()  # a new inode that no SQLite connection opens
        with pytest.raises(sqlite3.OperationalError):
            replica.conn().execute("SELECT 1")
        path.rmdir()
        sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.commit()
        assert replica.query("SELECT count(*) FROM t")[0][0] == 0
    finally:
        replica.close()
