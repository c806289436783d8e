"""Audit forwarding to a real TLS syslog collector the test starts: every event once, in order,
including those committed while the collector was down."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kms_client import Forbidden, ValidationFailed
from tests.integration.test_metrics import samples, scrape, value
from tests.support.cluster import add_node, first_node
from tests.support.kma_process import RunningKma
from tests.support.syslog_collector import SyslogCollector
from tests.support.waiting import wait_until

SEQ = re.compile(rb'chain_seq="(\d+)"')


@pytest.fixture
def collector() -> Iterator[SyslogCollector]:
    siem = SyslogCollector()
    siem.start()
    yield siem
    siem.close()


def seqs(messages: list[bytes]) -> list[int]:
    found = [SEQ.search(m) for m in messages]
    return [int(m.group(1)) for m in found if m]


def test_every_event_arrives_once_in_order_across_a_collector_outage(
    fresh_kma: RunningKma, collector: SyslogCollector
) -> None:
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")
    so.set_audit_forwarding(collector.address, collector.ca_pem)
    so.create_site("fw-before", "Before the outage")
    wait_until(lambda: any(b"fw-before" in m for m in collector.received()), 30, "the first events arrive")
    wait_until(
        lambda: auditor.get_audit_forwarding().this_kma.lag_events == 0, 30, "the KMA has sent everything"
    )
    first = collector.received()[0]
    assert first.startswith(b"<110>1 ") and b" kma-dal-1 kma - audit.forwarding [kma@32473 " in first

    # When the collector goes down and events are committed meanwhile
    collector.stop()
    for n in range(3):
        so.create_site(f"fw-during-{n}", "During the outage")

    def lagging() -> bool:
        forwarding = auditor.get_topology().audit_forwarding
        assert forwarding is not None and forwarding.address == collector.address
        return forwarding.lag_events >= 3 and not forwarding.connected and forwarding.last_error is not None

    wait_until(lagging, 30, "the topology shows forwarding lagging, disconnected, and why")
    metrics = samples(scrape(fresh_kma, auditor.token).text)
    assert value(metrics, "kma_audit_forwarding_lag_events") >= 3
    assert value(metrics, "kma_audit_forwarding_connected") == 0
    assert value(metrics, "kma_audit_forwarding_errors_total") >= 1  # the failed reconnections

    # Then, once it is back, they arrive, and so does what follows
    collector.start()
    so.create_site("fw-after", "After the outage")
    wait_until(lambda: any(b"fw-after" in m for m in collector.received()), 30, "the later events arrive")
    wait_until(lambda: auditor.get_audit_forwarding().this_kma.lag_events == 0, 30, "the KMA catches up")

    got = seqs(collector.received())
    assert got == list(range(got[0], got[0] + len(got))), "every event once, in chain order"
    text = b"\n".join(collector.received())
    for site in (b"fw-during-0", b"fw-during-1", b"fw-during-2", b"fw-after"):
        assert site in text
    head = max(e.chain_seq for e in auditor.list_audit_events(kma_id="kma-dal-1", limit=1).items)
    assert got[-1] >= head - 1  # at most the auditor's own last read is still on its way


def test_only_a_security_officer_sets_forwarding_and_bad_settings_are_refused(
    fresh_kma: RunningKma, collector: SyslogCollector
) -> None:
    with pytest.raises(Forbidden):
        fresh_kma.client("auditor").set_audit_forwarding(collector.address, collector.ca_pem)
    so = fresh_kma.client("so")
    with pytest.raises(ValidationFailed, match="HOST:PORT"):
        so.set_audit_forwarding("no-port", collector.ca_pem)
    with pytest.raises(ValidationFailed, match="PEM"):
        so.set_audit_forwarding(collector.address, "not a certificate")
    assert so.get_audit_forwarding().address is None


def test_a_collector_that_hangs_then_dies_loses_nothing_and_the_lag_says_so(
    fresh_kma: RunningKma, collector: SyslogCollector
) -> None:
    # Given forwarding that has caught up
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")
    so.set_audit_forwarding(collector.address, collector.ca_pem)
    so.create_site("hang-before", "Before the hang")
    wait_until(lambda: any(b"hang-before" in m for m in collector.received()), 30, "the first events arrive")
    wait_until(
        lambda: auditor.get_audit_forwarding().this_kma.lag_events == 0, 30, "the KMA has sent everything"
    )

    # When the collector stops reading while events are committed, holding what it was sent unread
    collector.pause()
    for n in range(20):
        so.create_site(f"hang-{n}", "While the collector hangs")
    wait_until(lambda: collector.unread() > 0, 30, "the KMA sends into the hung collector")
    time.sleep(3)  # the collector stays hung a while (the scenario, not a wait for the KMA)
    # ... and is then killed with all of it unread
    collector.die()

    # Then the KMA does not count those events as delivered
    assert auditor.get_audit_forwarding().this_kma.lag_events >= 20
    wait_until(
        lambda: not auditor.get_audit_forwarding().this_kma.connected, 30, "the KMA shows it disconnected"
    )
    # and once a collector is back on that address, every event reaches it, at least once
    collector.start()
    so.create_site("hang-after", "After the collector came back")
    wait_until(lambda: any(b"hang-after" in m for m in collector.received()), 30, "the later events arrive")
    wait_until(lambda: auditor.get_audit_forwarding().this_kma.lag_events <= 1, 30, "the KMA catches up")
    got = set(seqs(collector.received()))
    assert got >= set(range(min(got), max(got) + 1)), "no event of the chain is missing"
    text = b"\n".join(collector.received())
    assert all(f"hang-{n}".encode() in text for n in range(20))


def test_switching_collectors_and_back_resumes_each_from_its_own_position(fresh_kma: RunningKma) -> None:
    a, b = SyslogCollector(), SyslogCollector()
    a.start()
    b.start()
    try:
        so = fresh_kma.client("so")
        so.set_audit_forwarding(a.address, a.ca_pem)
        so.create_site("to-a", "Sent to A")
        wait_until(lambda: any(b"to-a" in m for m in a.received()), 30, "A gets its events")
        # When the collector is switched to B, events are committed, and it is switched back to A
        so.set_audit_forwarding(b.address, b.ca_pem)
        so.create_site("to-b", "Sent to B")
        wait_until(lambda: any(b"to-b" in m for m in b.received()), 30, "B gets its events")
        so.set_audit_forwarding(a.address, a.ca_pem)
        so.create_site("back-to-a", "Sent to A again")
        wait_until(lambda: any(b"back-to-a" in m for m in a.received()), 30, "A gets the later events")
        # Then A has every event of the chain from its first on, those sent to B meanwhile included
        got = set(seqs(a.received()))
        assert got >= set(range(min(got), max(got) + 1)), "A misses the events of its time away"
        assert any(b"to-b" in m for m in a.received())
    finally:
        a.close()
        b.close()


def test_every_kma_of_a_cluster_follows_a_setting_changed_through_one(tmp_path: Path) -> None:
    a, b = SyslogCollector(), SyslogCollector()
    a.start()
    b.start()
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    try:
        second.start()
        from_second = lambda m: b" kma-dal-2 kma - " in m  # noqa: E731  a header naming the KMA
        # Given forwarding to A, set through the first KMA: the second KMA's events reach A too
        first.client("so").set_audit_forwarding(a.address, a.ca_pem)
        second.client("auditor")  # a sign-in on the second KMA: an event of its own chain
        wait_until(lambda: any(from_second(m) for m in a.received()), 30, "the second KMA's events reach A")
        # When the setting is changed to B, again through the first KMA
        first.client("so").set_audit_forwarding(b.address, b.ca_pem)
        second.client("auditor")
        # Then the second KMA sends its events to B, and says so
        wait_until(lambda: any(from_second(m) for m in b.received()), 30, "the second KMA's events reach B")
        auditor = second.client("auditor")
        shows_b = lambda: auditor.get_audit_forwarding().this_kma.address == b.address  # noqa: E731
        wait_until(shows_b, 30, "the second KMA shows B")
    finally:
        second.stop()
        first.stop()
        a.close()
        b.close()
