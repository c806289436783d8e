"""kms_client against what a running KMA serves: its models are generated from the OpenAPI document
(tests/unit/test_client_wire.py checks the checked-in module against the document the generator
builds); here the document a real `kma serve` answers with is that same document, and the client's
lists of roles and states are the server's.
"""

from __future__ import annotations

import ssl
from typing import Any

import httpx
import pytest

import kms_client
from kma.domain.lifecycle import DataUnitState, KeyState
from kma.domain.roles import Permission, Role
from tests.support.kma_process import RunningKma
from tests.support.model_generator import CALLS, WIRE, model_generator


@pytest.fixture(scope="module")
def served_document(demo_kma: RunningKma) -> dict[str, Any]:
    trust = ssl.create_default_context(cadata=demo_kma.ca_pem)
    answer = httpx.get(f"https://{demo_kma.address}/api/v1/openapi.json", verify=trust, timeout=120)
    return dict(answer.json())


def test_the_client_is_generated_from_the_document_a_kma_serves(served_document: dict[str, Any]) -> None:
    generator = model_generator()
    assert generator.render(served_document) == WIRE.read_text(encoding="utf-8")
    assert generator.render_calls(served_document) == CALLS.read_text(encoding="utf-8")


def test_the_client_knows_the_roles_and_states_of_the_kma() -> None:
    assert kms_client.ROLES == tuple(Role)
    assert kms_client.PERMISSIONS == tuple(Permission)
    assert kms_client.KEY_STATES == tuple(KeyState)
    assert kms_client.DATA_UNIT_STATES == tuple(DataUnitState)
