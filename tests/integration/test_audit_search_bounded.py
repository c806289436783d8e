"""Free text that runs out of its time (issue 47): a word with a filter none or few of its matches
meet, on ten million events, walked the whole intersection before it could answer (286 ms). The
search now stops within its time, says how far back it looked (`searched_to`), and its cursor
searches on from there: following the cursors finds exactly what one unbounded search found, and the
last page's total is the exact count. Here the time is none and the first window a few events, so
that every request stops after one batch of two rows.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kma.services.audit import audit_log
from kma.services.audit.audit_log import iter_events, text_page, with_text
from kma.services.paging import Page, PageRequest
from kma.store import Batch, SQLiteStore
from kma.store.fts import index_all, text_match
from tests.integration.test_audit_fts_background import mark, raw, record, store  # noqa: F401  a fixture
from tests.support.kma_process import RunningKma, read_only_db
from tests.support.waiting import wait_until


def pages(s: SQLiteStore, q: str, order: str = "desc", **filters: str) -> list[Page]:
    """Every page of a search, following the cursors."""
    out: list[Page] = []
    cursor = None
    while True:
        out.append(text_page(s, with_text(PageRequest(10, cursor, q, None, order, filters))))
        cursor = out[-1].next_cursor
        if cursor is None:
            return out


@pytest.fixture
def tiny_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_log, "SEARCH_BUDGET_S", 0.0)
    monkeypatch.setattr(audit_log, "COUNT_BATCH", 2)


def test_a_search_out_of_time_says_how_far_it_looked_and_goes_on(
    store: SQLiteStore,  # noqa: F811  the fixture
    tiny_search: None,
) -> None:
    subjects = {3: "E00007", 25: "E00007", 33: "E00007"}
    ids = [
        store.write(Batch((), record(f"robot slot {i}", subjects.get(i, "E00001")))).event_id
        for i in range(40)
    ]
    with raw(store) as conn:
        index_all(conn)
    tail = [
        store.write(Batch((), record("robot arm", "E00007"))).event_id for _ in range(2)
    ]  # above the mark
    assert mark(store) == ids[-1]
    wanted = [*tail[::-1], ids[33], ids[25], ids[3]]

    walked = pages(store, "robot", subject_id="E00007")
    found = [r["id"] for p in walked for r in p.items]
    assert found == wanted  # newest first, none twice, none missed
    assert len(walked) > 3  # a few events a request
    stopped = walked[:-1]
    assert all(p.searched_to is not None and not p.total_exact for p in stopped)
    times = [p.searched_to for p in stopped if p.searched_to is not None]
    assert times == sorted(times, reverse=True)  # each looked further back
    assert walked[-1].searched_to is None
    assert (walked[-1].total, walked[-1].total_exact) == (len(wanted), True)

    oldest_first = pages(store, "robot", order="asc", subject_id="E00007")
    assert [r["id"] for p in oldest_first for r in p.items] == wanted[::-1]

    # The live tail's search starts at its `after_id`, not at the oldest event.
    newer = pages(store, "robot", order="asc", subject_id="E00007", after_id=str(ids[30]))
    assert [r["id"] for p in newer for r in p.items] == [ids[33], *tail]

    nothing = pages(store, "robot", subject_id="E00042")  # a filter none of the word's matches meets
    assert all(not p.items for p in nothing)
    assert (nothing[-1].total, nothing[-1].total_exact, nothing[-1].searched_to) == (0, True, None)


def test_words_that_seldom_meet_are_searched_on_by_one_of_them(
    store: SQLiteStore,  # noqa: F811  the fixture
    tiny_search: None,
) -> None:
    """Two words in one event out of many: FTS5's AND of them walks to the end; stopped, the search
    goes on by the longer word's matches, testing the other on each row."""
    ids = [
        store.write(Batch((), record(f"robot slot {i}" + (" offsite" if i in (4, 30) else "")))).event_id
        for i in range(40)
    ]
    with raw(store) as conn:
        index_all(conn)
    walked = pages(store, "robot offsite")
    assert [r["id"] for p in walked for r in p.items] == [ids[30], ids[4]]
    assert (walked[-1].total, walked[-1].total_exact) == (2, True)
    assert [r["id"] for p in pages(store, "slot robot", order="asc") for r in p.items] == ids


def test_a_search_with_a_page_found_stops_counting_in_time(
    store: SQLiteStore,  # noqa: F811  the fixture
    tiny_search: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(audit_log, "COUNT_BATCH", 5)  # a page (of 3) in the first rows read
    ids = [store.write(Batch((), record(f"robot slot {i}"))).event_id for i in range(40)]
    with raw(store) as conn:
        index_all(conn)
    first = text_page(store, with_text(PageRequest(3, None, "robot")))
    assert [r["id"] for r in first.items] == ids[:-4:-1]
    assert first.searched_to is None and not first.total_exact  # a page: the count said "more than"
    assert [r["id"] for p in pages(store, "robot") for r in p.items] == ids[::-1]


def test_a_free_text_export_reads_the_index_then_the_tail(store: SQLiteStore) -> None:  # noqa: F811
    """The export walks the index from the last event it sent (no list of every match), then the
    events above the mark; an event indexed between two chunks is sent once."""
    ids = [store.write(Batch((), record(f"vault tape {i}"))).event_id for i in range(9)]
    with raw(store) as conn:
        index_all(conn)
    ids += [store.write(Batch((), record(f"vault tape {i}"))).event_id for i in range(9, 14)]
    store.write(Batch((), record("cleaning cartridge")))
    sent: list[int] = []
    for event in iter_events(store, PageRequest(search="vault"), chunk=4):
        sent.append(event["id"])
        if len(sent) == 6:  # mid-export, the indexer catches up
            with raw(store) as conn:
                index_all(conn)
    assert sent == ids
    assert [
        e["id"] for e in iter_events(store, PageRequest(search="vault", filters={"subject_id": "E00002"}))
    ] == []


# --- over HTTPS, a KMA whose searches stop after one batch of two rows ----------------------------
@pytest.fixture
def hurried_kma(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningKma]:
    monkeypatch.setenv(audit_log.SEARCH_FOR_TESTS, "0,2")
    kma = RunningKma.demo_in(tmp_path)
    yield kma
    kma.stop()


def indexed(kma: RunningKma) -> bool:
    with read_only_db(kma) as db:
        row = db.execute(
            "SELECT (SELECT indexed_to FROM audit_fts_state), (SELECT max(id) FROM audit_events)"
        )
        indexed_to, newest = row.fetchone()
    return bool(indexed_to >= newest - 2)  # the reads of this test are audited meanwhile


def test_the_api_says_how_far_a_search_looked_and_its_cursor_goes_on(hurried_kma: RunningKma) -> None:
    auditor = hurried_kma.client("auditor")
    wait_until(lambda: indexed(hurried_kma), 30, what="the demo's events indexed")
    first = auditor.list_audit_events(search="key", limit=50)
    assert first.searched_to is not None and first.next_cursor is not None and not first.total_exact
    assert len(first.items) < 50  # what two rows' look found
    followed = [e.id for e in auditor.iter_audit_events(search="key", limit=50)]
    with read_only_db(hurried_kma) as db:  # every event, matched as FTS5 matches (kma.store.fts)
        rows = db.execute("SELECT id, message, operation, entity_id, subject_id FROM audit_events")
        matching = [r[0] for r in rows if text_match('"key"*', *r[1:])]
    assert followed == sorted(matching, reverse=True) and len(matching) > 20
    found = list(auditor.iter_audit_events(search="lost transit", limit=50))
    assert [e.operation for e in found] == ["key.compromise"]
    walked: list[Any] = []
    cursor = None
    while True:
        page = auditor.list_audit_events(search="key", event_class="auth", limit=50, cursor=cursor)
        walked.append(page)
        if (cursor := page.next_cursor) is None:
            break
    assert all(not p.items for p in walked)
    assert (walked[-1].total, walked[-1].total_exact, walked[-1].searched_to) == (0, True, None)


def test_a_free_text_export_sends_every_match(hurried_kma: RunningKma) -> None:
    auditor = hurried_kma.client("auditor")
    listed = sorted(e.id for e in auditor.iter_audit_events(search="E0000", subject_type="data_unit"))
    out = io.BytesIO()
    auditor.export_audit_csv(out, search="E0000", subject_type="data_unit")
    lines = out.getvalue().decode().split("#KMA-EXPORT-SIGNATURE")[0]  # the rows, before the signed trailer
    exported = [int(r["id"]) for r in csv.DictReader(io.StringIO(lines))]
    assert listed and exported[: len(listed)] == listed  # oldest first (events of this test may follow)
