"""Input rules a user runs into: which IDs are accepted, which times and cursors a list takes.

The ID rule is written here again from docs/api.md (`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`, a whole
string), not taken from the code it checks.
"""

from __future__ import annotations

import base64
import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kma.domain.validation import check_id
from kma.errors import BadRequest, ValidationFailed
from kma.services.paging import decode_cursor, timestamp

FIRST = string.ascii_letters + string.digits
REST = FIRST + "._-"


def id_allowed(value: str) -> bool:
    return 1 <= len(value) <= 64 and value[0] in FIRST and all(c in REST for c in value[1:])


@given(st.text(alphabet=st.sampled_from(REST + " \n\r\t\x00'\"%é\u200b\u202e/\\"), max_size=70))
@settings(max_examples=500)
def test_an_id_is_accepted_exactly_when_the_contract_allows_it(value: str) -> None:
    try:
        check_id(value, "The ID")
        accepted = True
    except ValidationFailed:
        accepted = False
    assert accepted == id_allowed(value), repr(value)


@pytest.mark.parametrize("value", ["E00001\n", "E00001\r\n", "\nE00001", "E00001 ", ""])
def test_ids_with_line_breaks_or_spaces_are_refused(value: str) -> None:
    with pytest.raises(ValidationFailed):
        check_id(value, "The ID")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0),
        ("1700000000", 1700000000),
        ("-86400", -86400),
        ("2026-11-21T07:40:00Z", 1795246800),
        ("2026-11-21T07:40:00", 1795246800),
        ("2026-11-21T08:40:00+01:00", 1795246800),
    ],
)
def test_list_filters_take_epoch_seconds_or_iso_times(text: str, seconds: int) -> None:
    assert timestamp(text) == seconds


@pytest.mark.parametrize("text", ["²", "1e9", "yesterday", "", "9" * 20, "-" + "9" * 20, "253402300800"])
def test_times_that_are_not_times_are_refused_not_crashed_on(text: str) -> None:
    with pytest.raises(ValidationFailed):
        timestamp(text)


def encoded(values: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


@pytest.mark.parametrize("values", [[1, "A"], ["x", "B"], [None, "C"], [1.5, "D"], [-(2**63), "E"]])
def test_cursors_the_server_makes_are_read_back(values: list[object]) -> None:
    assert decode_cursor(encoded(values)) == values


@pytest.mark.parametrize("values", [[[1], "A"], [{"a": 1}, "B"], [2**63, "C"], [1, 2, 3], {"a": 1}, "x"])
def test_crafted_cursors_are_refused(values: object) -> None:
    with pytest.raises(BadRequest):
        decode_cursor(encoded(values))
