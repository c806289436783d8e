"""How the KMIP listener hands its writes to the store's writer, and when the writer commits them.

The listener queues the writes of one turn of its event loop together, in the order they were
submitted (a Write Key's guarded change is committed after the one submitted before it, as it
was when each went to the queue at once), and each request hears its own outcome. The writer
waits a moment for writes on their way only while others are writing too: a lone drive's
request is never held back.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from kma.kmip.context import CommitBridge, durable
from kma.store import Batch, Refused, WriteResult, group_commit
from kma.store.batch import Done
from kma.store.group_commit import GroupCommitter


class RecordingStore:
    """Takes batches as the SQLite store does, and resolves them from another thread on demand."""

    def __init__(self, refuse: str | None = None) -> None:
        self.submitted: list[tuple[Batch, Done]] = []
        self.refuse = refuse

    def submit_with(self, batch: Batch, done: Done) -> None:
        if self.refuse is not None:
            raise RuntimeError(self.refuse)
        self.submitted.append((batch, done))

    def commit_all_from_writer_thread(self) -> None:
        def commit() -> None:
            for i, (batch, done) in enumerate(self.submitted):
                done(Refused("no") if batch.statements == ("refused",) else WriteResult([i], i))

        writer = threading.Thread(target=commit)
        writer.start()
        writer.join()


def test_the_writes_of_one_turn_reach_the_store_together_in_their_order() -> None:
    store = RecordingStore()
    kma = SimpleNamespace(store=store)
    batches = [Batch((f"s{i}",)) for i in range(3)]  # type: ignore[arg-type]

    async def main() -> list[Any]:
        bridge = CommitBridge(asyncio.get_running_loop())
        waiters = [durable(kma, b, bridge) for b in batches]  # type: ignore[arg-type]
        assert store.submitted == []  # not one by one: at the end of the turn
        await asyncio.sleep(0)
        assert [b for b, _ in store.submitted] == batches
        store.commit_all_from_writer_thread()
        return await asyncio.gather(*waiters)

    results = asyncio.run(main())
    assert [r.event_id for r in results] == [0, 1, 2]


def test_each_request_hears_its_own_refusal() -> None:
    store = RecordingStore()
    kma = SimpleNamespace(store=store)

    async def main() -> list[Any]:
        bridge = CommitBridge(asyncio.get_running_loop())
        ok = durable(kma, Batch(("fine",)), bridge)  # type: ignore[arg-type]
        refused = durable(kma, Batch(("refused",)), bridge)  # type: ignore[arg-type]
        await asyncio.sleep(0)
        store.commit_all_from_writer_thread()
        return await asyncio.gather(ok, refused, return_exceptions=True)

    ok, refused = asyncio.run(main())
    assert isinstance(ok, WriteResult)
    assert isinstance(refused, Refused)


def test_a_store_that_fails_to_take_a_write_fails_that_request() -> None:
    kma = SimpleNamespace(store=RecordingStore(refuse="the store is closed"))

    async def main() -> None:
        bridge = CommitBridge(asyncio.get_running_loop())
        await durable(kma, Batch(()), bridge)  # type: ignore[arg-type]

    with pytest.raises(RuntimeError, match="the store is closed"):
        asyncio.run(main())


def _committer(last_group: int) -> GroupCommitter:
    committer = GroupCommitter.__new__(GroupCommitter)  # its connection is not needed to wait
    committer._last_group = last_group
    return committer


def test_a_lone_writer_commits_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(group_commit.time, "sleep", waits.append)
    _committer(last_group=1).linger(queue.Queue())
    assert waits == []


def test_under_load_the_writer_waits_while_writes_keep_arriving(monkeypatch: pytest.MonkeyPatch) -> None:
    items: queue.Queue[Any] = queue.Queue()
    waits: list[float] = []

    def one_more_write_arrives(seconds: float) -> None:
        waits.append(seconds)
        items.put(("batch", None))

    monkeypatch.setattr(group_commit.time, "sleep", one_more_write_arrives)
    _committer(last_group=8).linger(items)
    assert len(waits) == group_commit.LINGER_STEPS  # bounded, however many keep arriving

    waits.clear()
    monkeypatch.setattr(group_commit.time, "sleep", waits.append)  # nothing more arrives
    _committer(last_group=8).linger(queue.Queue())
    assert len(waits) == 1
