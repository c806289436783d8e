"""kms_client's models against the OpenAPI document a running KMA serves, and its lists of roles and
states against the server's: a field added, renamed or made nullable on one side only fails here,
not in a user's hands.

The client keeps hand-written `from_json` methods (they turn the wire's ISO times into aware
datetimes and lists into tuples, and leave the GUI frozen dataclasses without pydantic); this test
is what keeps them honest.
"""

from __future__ import annotations

import dataclasses
import ssl
from typing import Any

import httpx
import pytest

import kms_client
from kma.domain.lifecycle import DataUnitState, KeyState
from kma.domain.roles import Permission, Role
from kms_client import audit_models, models
from tests.support.kma_process import RunningKma

# Client models whose server schema has another name.
SERVER_NAME = {
    "AuditCheckpoint": "Checkpoint",
    "AuditFacets": "Facets",
    "AuditReport": "Report",
    "Credential": "CredentialBody",
    "Page": "Page_Key_",
}
# Not a restatement of one schema: the client splits the answer into the pending operation and
# the codes shown once (`KeySplitChangePending` on the server); both halves are checked elsewhere.
COMPOSED = {"KeySplitChange"}


def client_models() -> list[type]:
    return [
        cls
        for module in (models, audit_models)
        for cls in vars(module).values()
        if dataclasses.is_dataclass(cls)
        and cls.__module__ == module.__name__
        and cls.__name__ not in COMPOSED
    ]


def nullable(prop: dict[str, Any]) -> bool:
    return any(option.get("type") == "null" for option in prop.get("anyOf", ()))


@pytest.fixture(scope="module")
def served_schemas(demo_kma: RunningKma) -> dict[str, Any]:
    trust = ssl.create_default_context(cadata=demo_kma.ca_pem)
    document = httpx.get(f"https://{demo_kma.address}/api/v1/openapi.json", verify=trust, timeout=120).json()
    return dict(document["components"]["schemas"])


@pytest.mark.parametrize("model", client_models(), ids=lambda cls: cls.__name__)
def test_a_client_model_has_the_fields_the_kma_sends(model: type, served_schemas: dict[str, Any]) -> None:
    schema = served_schemas[SERVER_NAME.get(model.__name__, model.__name__)]
    properties = schema["properties"]
    fields = {f.name: f for f in dataclasses.fields(model)}
    assert set(fields) == set(properties), (
        f"{model.__name__}: only the client has {sorted(set(fields) - set(properties))}, "
        f"only the KMA sends {sorted(set(properties) - set(fields))}"
    )
    for name, prop in properties.items():
        if nullable(prop):
            assert "None" in str(fields[name].type), f"{model.__name__}.{name} may be null"


def test_the_client_knows_the_roles_and_states_of_the_kma() -> None:
    assert kms_client.ROLES == tuple(Role)
    assert kms_client.PERMISSIONS == tuple(Permission)
    assert kms_client.KEY_STATES == tuple(KeyState)
    assert kms_client.DATA_UNIT_STATES == tuple(DataUnitState)
