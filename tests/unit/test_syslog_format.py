"""An audit event as RFC 5424 text in an RFC 6587 octet-counted frame."""

from __future__ import annotations

from kma.audit import syslog

EVENT = {
    "kma_id": "kma-dal-1",
    "site_id": "dallas",
    "chain_seq": 42,
    "created_at": 1_800_000_000,
    "operation": "user.create",
    "severity": "warning",
    "condition": "warning",
    "event_class": "user",
    "entity_id": "so",
    "entity_address": "10.0.0.5",
    "retention": "long",
    "subject_type": "user",
    "subject_id": 'jo"]\\x',
    "prev_hash": "aa",
    "hash": "bb",
    "message": "created user 'Jö' ✓",
}


def test_the_header_says_facility_log_audit_with_the_events_severity_time_and_kma() -> None:
    text = syslog.message(EVENT).decode()
    assert text.startswith("<108>1 2027-01-15T08:00:00Z kma-dal-1 kma - user.create [kma@32473 ")
    assert text.endswith(" \ufeffcreated user 'Jö' ✓")


def test_structured_data_escapes_quote_bracket_and_backslash() -> None:
    text = syslog.message(EVENT).decode()
    assert 'subject_id="jo\\"\\]\\\\x"' in text and 'chain_seq="42"' in text


def test_a_frame_counts_bytes_not_characters() -> None:
    msg = syslog.message(EVENT)
    framed = syslog.frame(msg)
    length, _, rest = framed.partition(b" ")
    assert int(length) == len(msg) == len(rest) and len(msg) > len(msg.decode())
