"""The management API's OpenAPI document and docs page as client generators and Swagger UI use them,
read from a real `kma serve` over TLS.

A generator names its methods after the operationIds and sends the token where the document says
one is needed; Swagger UI offers "Authorize" only for a declared security scheme; and the docs page
of an appliance on an isolated network must load nothing from another origin.
"""

from __future__ import annotations

import re
import ssl
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest

from tests.support.kma_process import RunningKma

API = "/api/v1"
UNAUTHENTICATED = {"sign_in", "get_status", "get_about", "get_ca", "join_cluster", "enrol_key_split_member"}


@pytest.fixture(scope="module")
def http(demo_kma: RunningKma) -> httpx.Client:
    trust = ssl.create_default_context(cadata=demo_kma.ca_pem)
    return httpx.Client(base_url=f"https://{demo_kma.address}", verify=trust, timeout=120)


@pytest.fixture(scope="module")
def document(http: httpx.Client) -> dict[str, Any]:
    answer = http.get(f"{API}/openapi.json")
    assert answer.status_code == 200
    return dict(answer.json())


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    paths = document["paths"].items()
    return [(method.upper(), path, op) for path, item in paths for method, op in item.items()]


def test_operation_ids_are_unique_and_named_after_the_routes(document: dict[str, Any]) -> None:
    ids = [op["operationId"] for _, _, op in operations(document)]
    assert len(ids) == len(set(ids))
    for operation_id in ids:
        assert re.fullmatch(r"[a-z]+(_[a-z0-9]+)*", operation_id), operation_id
        assert "api_v1" not in operation_id  # FastAPI's default was sign_in_api_v1_auth_sign_in_post
    by_route = {(method, path): op["operationId"] for method, path, op in operations(document)}
    assert by_route[("POST", f"{API}/auth/sign-in")] == "sign_in"
    assert by_route[("GET", f"{API}/keys")] == "list_keys"
    assert by_route[("POST", f"{API}/keys/{{key_id}}/destroy")] == "destroy_key"
    assert by_route[("GET", f"{API}/audit-events/verify")] == "verify_audit_chain"


def test_the_bearer_token_is_a_security_scheme_on_every_operation_that_needs_one(
    document: dict[str, Any],
) -> None:
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearer"]["type"] == "http" and schemes["bearer"]["scheme"] == "bearer"
    open_ones = {op["operationId"] for _, _, op in operations(document) if not op.get("security")}
    assert open_ones == UNAUTHENTICATED
    for _, _, op in operations(document):
        if op.get("security"):
            assert op["security"] == [{"bearer": []}]
            assert "401" in op["responses"], op["operationId"]


def test_each_operation_lists_the_errors_it_can_return(document: dict[str, Any]) -> None:
    by_id = {op["operationId"]: op for _, _, op in operations(document)}

    def errors(operation_id: str) -> set[str]:
        return {status for status in by_id[operation_id]["responses"] if int(status) >= 400}

    assert errors("get_status") == {"500"}  # no session, no parameters, answered even locked
    # any role, refused while locked, and to a session that owes its two-step sign-in enrolment
    assert errors("get_dashboard") == {"401", "403", "500", "503"}
    assert errors("sign_in") == {"400", "401", "413", "422", "429", "500", "503"}
    assert errors("destroy_key") == {"400", "401", "403", "404", "409", "413", "422", "500", "503"}
    assert "429" not in errors("list_keys") and "413" not in errors("list_keys")
    for _, _, op in operations(document):
        for status, response in op["responses"].items():
            if int(status) >= 400:
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}, (op["operationId"], status)
    assert "HTTPValidationError" not in document["components"]["schemas"]  # FastAPI's, never sent


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in ("src", "href") and value]


def test_the_docs_page_loads_swagger_ui_from_the_kma_itself(http: httpx.Client) -> None:
    page = http.get(f"{API}/docs")
    assert page.status_code == 200
    links = _Links()
    links.feed(page.text)
    assert links.urls, "the page loads Swagger UI from somewhere"
    for url in links.urls:
        assert url.startswith(f"{API}/docs/assets/"), url  # same origin, from the package
        asset = http.get(url)
        assert asset.status_code == 200 and len(asset.content) > 1000, url
    assert "://" not in page.text.replace("http://www.w3.org", "")  # no other origin in the page
    assert "validatorUrl" in page.text  # Swagger UI's public validator badge switched off


@pytest.mark.parametrize("path", [f"{API}/dashboard", "/metrics"])
def test_a_401_names_the_bearer_scheme(http: httpx.Client, path: str) -> None:
    answer = http.get(path)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == 'Bearer realm="kma"'
    assert answer.json()["error"]["code"] == "unauthenticated"
