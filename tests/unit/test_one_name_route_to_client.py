"""One word from the route to the button: a route's Python function, its operationId, the client
method that calls it and the manager's write are one name (docs/architecture.md "Where to add").

A route renamed, or a client method hand-written under another name, fails here; so does a write
naming a client method that is not a route's."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import app.writes
from app.writes import Write
from kms_client import KmsClient
from kms_client.calls import Calls
from tests.support.model_generator import model_generator

# Public methods of the client that call no route of their own: the connection, paging iterators,
# and a history chosen by subject type. Anything else the client offers is a route, by its name.
HELPERS = {
    "close",
    "learn_cluster",
    "use_token",
    "iter_pages",
    "iter_all",
    "history",
    "tail_audit_events",
    "ca_renewal",  # compares the CA the KMA serves (get_ca) with the pinned one
    "follow_transfer_job",  # polls get_transfer_job until the job ends
}


@pytest.fixture(scope="module")
def operations() -> dict[str, str]:
    """Each operation of the API (the Prometheus scrape aside) by its operationId: `METHOD path`."""
    generator: ModuleType = model_generator()
    document = generator.served_document()
    return {
        operation["operationId"]: f"{verb.upper()} {path}"
        for path, item in document["paths"].items()
        if path.startswith(generator.PREFIX + "/")
        for verb, operation in item.items()
    }


def _client_methods() -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(KmsClient, callable)
        if not name.startswith("_") and not name.startswith("iter_") and name not in HELPERS
    }


def test_every_route_has_a_client_method_of_its_own_name(operations: dict[str, str]) -> None:
    missing = {f"{route} ({name})" for name, route in operations.items() if not hasattr(KmsClient, name)}
    assert not missing, f"routes without a KmsClient method of the route function's name: {sorted(missing)}"


def test_every_client_method_is_named_as_the_route_it_calls(operations: dict[str, str]) -> None:
    strays = _client_methods() - set(operations)
    assert not strays, (
        f"KmsClient methods named unlike any route: {sorted(strays)}; name the route's function as "
        "the method (URL paths never change), or list a helper that calls no route in HELPERS"
    )


def test_the_generated_calls_are_the_routes_a_hand_written_method_does_not_take() -> None:
    """calls.py holds a method per route; client.py and its parts add only what generation cannot
    know, each overriding a generated call or answering a route the generator leaves to them."""
    generated = {n for n, m in vars(Calls).items() if inspect.isfunction(m)}
    assert {"list_keys", "approve_quorum_operation", "get_status", "set_audit_retention"} <= generated


def _writes() -> list[tuple[str, Write]]:
    found = []
    for info in pkgutil.iter_modules(app.writes.__path__):
        module = importlib.import_module(f"app.writes.{info.name}")
        found += [(f"{info.name}.{name}", w) for name, w in vars(module).items() if isinstance(w, Write)]
    return found


def test_a_write_of_one_call_names_the_route_and_is_named_as_it(operations: dict[str, str]) -> None:
    for declared, write in _writes():
        method = write.client_method
        if method is None:
            continue
        assert method in operations, f"{declared} calls KmsClient.{method}, which is no route"
        assert declared.rsplit(".", 1)[1] == method, f"{declared} calls {method}: give it the route's name"
