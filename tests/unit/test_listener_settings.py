"""kma.toml's [listeners] table: what an administrator may set, and clear refusals of the rest."""

from __future__ import annotations

from typing import Any

import pytest

from kma.errors import ValidationFailed
from kma.limits import ListenerLimits


def test_defaults_hold_when_nothing_is_set() -> None:
    limits = ListenerLimits.from_table({})
    assert limits == ListenerLimits()
    assert limits.trusted_proxies == ()  # X-Forwarded-For believed from no one


def test_set_values_are_taken() -> None:
    limits = ListenerLimits.from_table(
        {
            "handshake_timeout": 2,
            "service_max_connections": 12,
            "kept_for_agents": 6,
            "trusted_proxies": ["10.0.1.2"],
        }
    )
    assert (limits.handshake_timeout, limits.service_max_connections) == (2.0, 12)
    assert limits.trusted_proxies == ("10.0.1.2",)


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"handshake_timout": 5}, "unknown setting 'handshake_timout'"),
        ({"request_timeout": 0}, "request_timeout must be a positive number of seconds"),
        ({"max_per_address": 2.5}, "max_per_address must be a positive whole number"),
        ({"management_max_connections": True}, "management_max_connections must be a positive"),
        ({"trusted_proxies": "10.0.1.2"}, "trusted_proxies is a list of addresses"),
        ({"kept_for_agents": 1024}, "kept_for_agents must be less than service_max_connections"),
    ],
)
def test_a_wrong_setting_is_refused_with_what_to_write(table: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationFailed, match=says):
        ListenerLimits.from_table(table)
