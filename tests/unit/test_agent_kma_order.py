"""Which KMA a drive asks first: its own site's ready KMAs, then other sites', then locked ones."""

from __future__ import annotations

import json
from pathlib import Path

from kma.agent.simulator import kma_order


def write_agent(tmp_path: Path, kmas: list[dict[str, str]] | None) -> Path:
    (tmp_path / "agent.json").write_text(
        json.dumps({"agent_id": "t10k-dal-01", "site_id": "dallas", "kma": "10.0.0.1:5696"})
    )
    if kmas is not None:
        (tmp_path / "kmas.json").write_text(json.dumps(kmas))
    return tmp_path


def test_own_site_first_then_other_sites_then_locked_kmas(tmp_path: Path) -> None:
    kmas = [
        {"service_address": "10.1.0.1:5696", "site_id": "denver", "status": "ready"},
        {"service_address": "10.0.0.2:5696", "site_id": "dallas", "status": "locked"},
        {"service_address": "10.0.0.1:5696", "site_id": "dallas", "status": "ready"},
        {"service_address": "10.1.0.2:5696", "site_id": "denver", "status": "locked"},
    ]
    assert kma_order(write_agent(tmp_path, kmas)) == [
        "10.0.0.1:5696",
        "10.1.0.1:5696",
        "10.0.0.2:5696",
        "10.1.0.2:5696",
    ]


def test_without_a_kma_list_the_enrollment_kma_is_the_only_one(tmp_path: Path) -> None:
    assert kma_order(write_agent(tmp_path, None)) == ["10.0.0.1:5696"]
    assert kma_order(write_agent(tmp_path, [])) == ["10.0.0.1:5696"]
