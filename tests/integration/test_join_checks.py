"""Joins' KMA passphrase checks (Argon2id) run one at a time per source address (issue 26): many
joins at once from one address do not burn many cores, and another address is served meanwhile."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.integration.test_lockouts import http_from
from tests.integration.test_metrics import TOKEN, kma, samples, scrape, value
from tests.integration.test_refusal_audit import _join
from tests.support.kma_process import RunningKma

__all__ = ["kma"]  # the fixture: a KMA with a metrics token


def test_joins_from_one_address_are_checked_one_at_a_time_and_another_address_is_served(
    kma: RunningKma,
) -> None:
    def join(n: int) -> tuple[str, httpx.Response]:
        address = "127.0.0.8" if n == 0 else "127.0.0.7"
        with http_from(kma, address) as http:
            return address, http.post("/cluster/join", json=_join(n)[1])

    # When a dozen joins as made-up KMAs come at once from one address, and one from another
    with ThreadPoolExecutor(13) as pool:
        answers = list(pool.map(join, range(13)))

    # Then each is refused as a wrong passphrase, or as busy (another from its address being checked)
    assert {a.status_code for _, a in answers} <= {401, 429}
    # the other address's join was checked, not turned away
    assert [a.status_code for address, a in answers if address == "127.0.0.8"] == [401]
    busy = [a for _, a in answers if a.status_code == 429]
    assert all("being checked" in a.json()["error"]["message"] for a in busy)
    # and never did two checks from one address run at once
    found = samples(scrape(kma, TOKEN).text)
    assert value(found, "kma_join_passphrase_checks_concurrent_peak") == 1
    checked = value(found, "kma_join_passphrase_checks_total", result="checked")
    assert checked + value(found, "kma_join_passphrase_checks_total", result="busy") == 13
    assert checked == 13 - len(busy)
