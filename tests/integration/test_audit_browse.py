"""What an auditor does in the browser: free text, filters, the live tail, histories, charts."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.support.kma_process import RunningKma, read_only_db


def test_free_text_finds_words_anywhere_in_the_message(demo_kma: RunningKma) -> None:
    auditor = demo_kma.client("auditor")
    lost = auditor.list_audit_events(search="lost transit")
    assert [e.operation for e in lost.items] == ["key.compromise"]
    assert lost.total == 1
    destroyed = auditor.list_audit_events(search="key.destroy", event_class="key")  # not reports *about* them
    assert destroyed.total >= 2 and {e.operation for e in destroyed.items} == {"key.destroy"}
    prefix = auditor.list_audit_events(search="E0000", subject_type="data_unit")
    assert prefix.total >= 9  # E00001..E00009 registered
    assert auditor.list_audit_events(search='" AND NEAR(').total == 0  # FTS syntax is taken literally


def test_the_live_tail_returns_only_what_is_new(demo_kma: RunningKma) -> None:
    auditor, op = demo_kma.client("auditor"), demo_kma.client("op")
    newest = auditor.list_audit_events(limit=1).items[0].id
    op.create_data_unit("TAIL01", "for the live tail")
    tail = auditor.tail_audit_events(newest)
    assert [e.id for e in tail.items] == sorted(e.id for e in tail.items)
    assert all(e.id > newest for e in tail.items)
    assert any(e.operation == "data_unit.create" and e.subject_id == "TAIL01" for e in tail.items)
    assert auditor.tail_audit_events(tail.items[-1].id, operation="data_unit.create").total == 0


def test_filters_combine(demo_kma: RunningKma) -> None:
    auditor = demo_kma.client("auditor")
    page = auditor.list_audit_events(
        event_class="key",
        entity_id="op",
        kma_id="kma-dal-1",
        site_id="dallas",
        condition="success",
        severity="info",
        limit=1000,
    )
    assert page.total == len(page.items) > 0
    assert all((e.event_class, e.entity_id) == ("key", "op") for e in page.items)
    facets = auditor.get_audit_facets()
    assert "key.destroy" in facets.operation and "dallas" in facets.site_id


def test_key_history_shows_each_state_with_who_did_it(demo_kma: RunningKma) -> None:
    auditor = demo_kma.client("auditor")
    key = next(k for k in auditor.iter_keys(state="destroyed"))
    history = auditor.key_history(key.id)
    spans = history.lanes[0].spans
    lifecycle = ["protect_and_process", "process_only", "deactivated", "destroyed"]
    assert [s.state for s in spans][-4:] == lifecycle
    assert spans[-1].by == "op" and spans[-1].end is None
    assert next(s for s in spans if s.state == "protect_and_process").by == "op"
    kinds = {b.kind for b in history.boundaries}
    assert {"encryption_period_end", "cryptoperiod_end"} <= kinds
    assert [e.operation for e in history.events] == ["key.issue", "key.destroy"]


def test_data_unit_history_has_its_keys_as_lanes(demo_kma: RunningKma) -> None:
    auditor = demo_kma.client("auditor")
    history = auditor.data_unit_history("E00005")
    assert history.state == "readable_needs_rekey"
    assert [lane.subject_type for lane in history.lanes] == ["data_unit", "key"]
    assert any(b.kind == "compromised" and b.by == "op" for b in history.boundaries)
    assert {e.operation for e in history.events} >= {"data_unit.create", "key.issue", "key.compromise"}


def test_agent_history_follows_enable_and_disable(demo_kma: RunningKma) -> None:
    op, auditor = demo_kma.client("op"), demo_kma.client("auditor")
    op.update_agent("9840d-bos-01", enabled=False)
    history = auditor.agent_history("9840d-bos-01")
    assert history.state == "disabled"
    last = history.lanes[0].spans[-1]
    assert (last.state, last.by) == ("disabled", "op")
    op.update_agent("9840d-bos-01", enabled=True)
    assert auditor.agent_history("9840d-bos-01").lanes[0].spans[-1].state == "enrollment_pending"


def test_dashboard_series_count_keys_issued_and_events_by_severity(demo_kma: RunningKma) -> None:
    auditor = demo_kma.client("auditor")
    series = auditor.get_dashboard_series(days=410)
    assert len(series.keys_issued) == 410
    issued = auditor.list_keys(limit=1, sort="activated_at").total - series.keys_by_state.get("ready", 0)
    assert sum(d.count for d in series.keys_issued) == issued
    assert sum(d.info for d in series.events_by_severity) > 0
    assert series.keys_by_state["destroyed"] >= 2


def test_dashboard_events_per_day_are_the_trails_own_counts(demo_kma: RunningKma) -> None:
    """The chart's events per day and severity come from counts kept beside the trail (migration
    0108), no longer from the events; each past day is what the trail holds, today at least what
    it held a moment before."""
    demo_kma.client("op").create_data_unit("SER0001", "an event of today")
    with read_only_db(demo_kma.data_dir / "kma.db") as db:
        rows = db.execute("SELECT created_at / 86400, severity, count(*) FROM audit_events GROUP BY 1, 2")
        counted = {(datetime.fromtimestamp(d * 86400, UTC).strftime("%Y-%m-%d"), s): n for d, s, n in rows}
    series = demo_kma.client("auditor").get_dashboard_series(days=410)
    *past, today = series.events_by_severity
    assert sum(d.info + d.warning + d.error for d in past) > 0
    for day in past:
        for severity in ("info", "warning", "error"):
            assert getattr(day, severity) == counted.get((day.day, severity), 0), (day, severity)
    assert today.info >= counted.get((today.day, "info"), 0) > 0


def test_free_text_pages_follow_on_without_gaps(demo_kma: RunningKma) -> None:
    auditor = demo_kma.client("auditor")
    everything = auditor.list_audit_events(search="key", limit=1000)
    paged = [e.id for e in auditor.iter_audit_events(search="key", limit=3)]
    assert paged == [e.id for e in everything.items] and len(paged) == everything.total
    oldest_first = [e.id for e in auditor.iter_audit_events(search="key", limit=4, order="asc")]
    assert oldest_first == sorted(paged)


def test_dashboard_issue_rates_and_keys_per_day_are_the_keys_own_counts(demo_kma: RunningKma) -> None:
    """Keys issued per day and the backup readiness's issue rates come from counts kept beside the
    keys (migration 0115), not from the keys: each must still be exactly what the keys say, the
    hour, day and week windows included (each starts inside an hour)."""
    op = demo_kma.client("op")
    group = op.list_key_groups(limit=1).items[0].id
    op.create_data_unit("RATE01", "a tape for one key issued now")
    op.issue_key(group, "RATE01")  # one issued now: today's count and the hour's window move
    dashboard = demo_kma.client("auditor").get_dashboard()
    series = demo_kma.client("auditor").get_dashboard_series(days=410)
    readiness = dashboard.backups
    assert readiness is not None
    me = demo_kma.client("auditor").get_status().kma_id
    with read_only_db(demo_kma.data_dir / "kma.db") as db:
        now = int(db.execute("SELECT max(activated_at) FROM keys").fetchone()[0])
        per_day = dict(db.execute("SELECT activated_at / 86400, count(*) FROM keys GROUP BY 1").fetchall())

        def issued_in(window: int) -> int:
            sql = "SELECT count(*) FROM keys WHERE activated_at >= ? AND kma_id = ?"
            return int(db.execute(sql, (now - window, me)).fetchone()[0])

        expected = (issued_in(3600), issued_in(86400), issued_in(7 * 86400))
    # the dashboard read its windows a moment after `now`: nothing was issued between
    hour, day, week = expected
    assert hour >= 1 and readiness.keys_issued_recently == week
    ready = readiness.ready_keys
    assert readiness.ready_keys_run_out_in == min(
        ready * 3600 // hour, ready * 86400 // day, ready * 7 * 86400 // week
    )
    for day in series.keys_issued:
        index = int(datetime.strptime(day.day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()) // 86400
        assert day.count == per_day.get(index, 0), day
    assert sum(d.count for d in series.keys_issued) > 1


def test_free_text_with_a_filter_finds_what_each_finds_alone(demo_kma: RunningKma) -> None:
    """The filters the index holds are terms of the free text's FTS5 query (migration 0105): the
    events found are exactly the text's matches that the filter keeps, for every kind of filter;
    and a word is matched in the text only, never in a filtered column (no event says "security",
    though refusals are of that class)."""
    auditor = demo_kma.client("auditor")
    text = list(auditor.iter_audit_events(search="key", limit=1000))
    assert text
    newest = text[0].id  # events added meanwhile (a pool refill "generated ... keys") are left out
    filters: list[dict[str, str]] = [
        {"event_class": "key"},
        {"subject_type": "data_unit"},
        {"severity": "info"},
        {"condition": "success"},
        {"kma_id": "kma-dal-1"},
        {"site_id": "dallas"},
        {"retention": "long"},
        {"entity_id": "op"},
        {"operation": "key.destroy"},
        {"event_class": "key", "entity_id": "op", "condition": "success"},
    ]
    for chosen in filters:
        found = [
            e.id for e in auditor.iter_audit_events(search="key", limit=1000, **chosen) if e.id <= newest
        ]
        kept = [e.id for e in text if all(str(getattr(e, n)) == v for n, v in chosen.items())]
        assert found == kept, chosen
    security = auditor.list_audit_events(event_class="security", limit=1000).items
    said = [
        e for e in security if "security" in f"{e.message} {e.operation} {e.entity_id} {e.subject_id}".lower()
    ]
    assert auditor.list_audit_events(search="security", event_class="security").total == len(said)
