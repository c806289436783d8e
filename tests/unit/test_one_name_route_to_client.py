"""One word from the route to the button: a route's Python function, its operationId, the client
method that calls it and the manager's write are one name (docs/architecture.md "Where to add").

A route renamed, or a client method hand-written under another name, fails here; so does a write
naming a client method that is not a route's."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
from pathlib import Path
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


ROUTES = Path(__file__).resolve().parents[2] / "kma" / "api" / "routes"

# Routes whose service function has another name today (issue 44): each is renamed to the route's
# name when its module is free of other work; the list only shrinks. Some answer through a
# presenter or another noun on purpose, and say why.
NOT_YET_NAMED = frozenset(
    {
        "alerts.add_alert_channel -> alerts.describe_channel",  # the answer's presenter
        "alerts.change_alert_channel -> alerts.describe_channel",  # the answer's presenter
        "audit.list_audit_events -> audit.audit_log.list_events",
        "audit.get_audit_facets -> audit.audit_log.facets",
        "audit.get_audit_report -> audit.audit_export.report",
        "audit.list_audit_checkpoints -> audit.audit_retention.list_checkpoints",
        "audit.create_audit_checkpoint -> audit.audit_retention.checkpoint",
        "audit.get_audit_retention -> audit.audit_retention.get_retention",
        "audit.set_audit_retention -> audit.audit_retention.set_retention",
        "audit.prune_audit_events -> audit.audit_retention.prune",
        "auth.get_me -> users.get_user",  # the signed-in user, one of the users
        "auth.get_second_factor_policy -> sign_in.second_factor_policy.get_policy",
        "backups.core_security_backup_status -> backups.core_status",
        "kmas.renew_kma_certificate -> certificates.certificate_renewal.request",
        "quorum.get_key_split -> quorum.key_split.key_split_view",
        "quorum.set_quorum_lifetime -> quorum.key_split.set_lifetime",
        "media_pools.get_media_refusals -> media.media_refusals.refusal_counts",
        "reports.get_users_report -> reports.user_report.users_report",
        "reports.get_media_report -> media.media_report.media_report",
        "reports.get_key_inventory_report -> reports.compliance_reports.key_inventory_report",
        "reports.get_cryptoperiods_report -> reports.compliance_reports.cryptoperiods_report",
        "reports.get_agents_report -> reports.compliance_reports.agents_report",
        "reports.get_quorum_operations_report -> reports.compliance_reports.quorum_operations_report",
        "reports.get_report_schedule -> reports.report_schedule.get_schedule",
        "reports.set_report_schedule -> reports.report_schedule.set_schedule",
        "transfer_partners.enable_transfer_partner"
        " -> transfer.transfer_partners.set_transfer_partner_enabled",
        "transfer_partners.disable_transfer_partner"
        " -> transfer.transfer_partners.set_transfer_partner_enabled",
    }
)


def _service_names(tree: ast.Module) -> dict[str, tuple[str, str | None]]:
    """Names a routes module imports from kma.services: a module (its path, None) or a function
    (its module's path, its name)."""
    names: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("kma.services"):
            continue
        package = importlib.import_module(str(node.module))
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            is_module = hasattr(package, "__path__") and importlib.util.find_spec(full) is not None
            names[alias.asname or alias.name] = (full, None) if is_module else (str(node.module), alias.name)
    return names


def _answered_by() -> dict[str, str]:
    """Each route function that answers what a service function returns (its last `return` calls
    it): `routes_module.route -> service_module.function`."""
    found = {}
    for path in sorted(ROUTES.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = _service_names(tree)
        for route in tree.body:
            if not isinstance(route, ast.FunctionDef) or not any(
                isinstance(d, ast.Call) and ast.unparse(d.func).startswith("router.")
                for d in route.decorator_list
            ):
                continue
            returns = [
                n for n in ast.walk(route) if isinstance(n, ast.Return) and isinstance(n.value, ast.Call)
            ]
            if not returns:
                continue
            called = returns[-1].value.func  # type: ignore[union-attr]
            if isinstance(called, ast.Attribute) and isinstance(called.value, ast.Name):
                module, function = imported.get(called.value.id, ("", None))
                name = called.attr if module and function is None else None
            elif isinstance(called, ast.Name) and called.id in imported:
                module, name = imported[called.id]
            else:
                continue
            if name is not None:
                service = f"{module.removeprefix('kma.services.')}.{name}"
                found[f"{path.stem}.{route.name}"] = service
    return found


def test_a_route_and_its_service_function_share_one_name() -> None:
    answered = _answered_by()
    assert len(answered) > 80, "the routes' service functions were not found"
    differ = {
        f"{route} -> {service}"
        for route, service in answered.items()
        if route.rsplit(".", 1)[1] != service.rsplit(".", 1)[1]
    }
    assert not differ - NOT_YET_NAMED, (
        f"routes whose service function is named otherwise: {sorted(differ - NOT_YET_NAMED)}; "
        "name the service function as the route (docs/architecture.md)"
    )
    assert not NOT_YET_NAMED - differ, (
        f"named alike now: take them off NOT_YET_NAMED: {sorted(NOT_YET_NAMED - differ)}"
    )
