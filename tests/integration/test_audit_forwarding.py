"""Audit forwarding to a real TLS syslog collector the test starts: every event once, in order,
including those committed while the collector was down."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest

from kms_client import Forbidden, ValidationFailed
from tests.integration.test_metrics import samples, scrape, value
from tests.support.kma_process import RunningKma
from tests.support.syslog_collector import SyslogCollector

SEQ = re.compile(rb'chain_seq="(\d+)"')


def eventually(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.1)


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
    eventually(lambda: any(b"fw-before" in m for m in collector.received()), "the first events arrive")
    eventually(lambda: auditor.audit_forwarding().this_kma.lag_events == 0, "the KMA has sent everything")
    first = collector.received()[0]
    assert first.startswith(b"<110>1 ") and b" kma-dal-1 kma - audit.forwarding [kma@32473 " in first

    # When the collector goes down and events are committed meanwhile
    collector.stop()
    for n in range(3):
        so.create_site(f"fw-during-{n}", "During the outage")

    def lagging() -> bool:
        forwarding = auditor.cluster_topology().audit_forwarding
        assert forwarding is not None and forwarding.address == collector.address
        return forwarding.lag_events >= 3 and not forwarding.connected and forwarding.last_error is not None

    eventually(lagging, "the topology shows forwarding lagging, disconnected, and why")
    metrics = samples(scrape(fresh_kma, auditor.token).text)
    assert value(metrics, "kma_audit_forwarding_lag_events") >= 3
    assert value(metrics, "kma_audit_forwarding_connected") == 0
    assert value(metrics, "kma_audit_forwarding_errors_total") >= 1  # the failed reconnections

    # Then, once it is back, they arrive, and so does what follows
    collector.start()
    so.create_site("fw-after", "After the outage")
    eventually(lambda: any(b"fw-after" in m for m in collector.received()), "the later events arrive")
    eventually(lambda: auditor.audit_forwarding().this_kma.lag_events == 0, "the KMA catches up")

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
    assert so.audit_forwarding().address is None
