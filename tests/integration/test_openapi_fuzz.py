"""Schemathesis over the live OpenAPI document: no request, valid or not, gets a 5xx, and every
error is the contract's `{"error": {code, message}}` with the status its code stands for.

It runs as `admin` (every role, so requests get past the role checks into the services), on a
KMA of its own since it writes whatever it generates, with few examples per operation so that
the suite stays quick. Sign-out is left out so the token survives.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.checks import not_a_server_error, response_schema_conformance

from tests.integration.helpers import API, ERROR_STATUS
from tests.support.kma_process import RunningKma, read_only_db

EXAMPLES = {GenerationMode.POSITIVE: 12, GenerationMode.NEGATIVE: 8}
LEFT_OUT = {
    ("POST", f"{API}/auth/sign-out"),  # would end the session the run uses
    ("POST", f"{API}/kmas/{{kma_id}}/lock"),  # would turn every later answer into 503 kma_locked
}


@pytest.fixture(scope="module")
def fuzzed_kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("fuzz-kma"))
    yield kma
    kma.stop()


def session_for(kma: RunningKma, ca_file: Path) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # REQUESTS_CA_BUNDLE & co. must not replace the pinned CA
    session.verify = str(ca_file)
    session.headers["Authorization"] = f"Bearer {kma.client('admin').token}"
    return session


def error_shape_problem(response: requests.Response) -> str | None:
    if response.status_code < 400:
        return None
    try:
        body: Any = response.json()
        error = body["error"]
        ok = (
            set(body) == {"error"}
            and set(error) == {"code", "message"}
            and isinstance(error["message"], str)
            and error["message"].strip() != ""
        )
    except (ValueError, KeyError, TypeError):
        return f"not the error shape: {response.text[:200]!r}"
    if not ok:
        return f"not the error shape: {body!r}"
    expected = 400 if response.status_code == 405 else response.status_code
    if ERROR_STATUS.get(error["code"]) != expected:
        return f"code {error['code']!r} with status {response.status_code}"
    return None


def fuzz(operation: APIOperation, mode: GenerationMode, examples: int, call: dict[str, Any]) -> list[str]:
    """Run `examples` generated requests on one operation; what went wrong, for every one of them."""
    problems: list[str] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: Case) -> None:
        response = case.call(**call)
        where = f"{operation.label} ({mode.value}) {case.method} {case.formatted_path} query={case.query}"
        problem = error_shape_problem(response)
        if problem:
            problems.append(f"{where}: {problem}")
        try:
            case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])
        except (Exception, BaseExceptionGroup) as failure:  # collected: one run reports every operation
            problems.append(f"{where}: {str(failure)[:400]}")

    try:
        check()
    except Unsatisfiable:  # nothing to get wrong (e.g. negative data for a route without input)
        assert mode is GenerationMode.NEGATIVE, operation.label
    return problems


def test_no_generated_request_gets_a_server_error(fuzzed_kma: RunningKma, tmp_path: Path) -> None:
    ca_file = tmp_path / "ca.pem"
    ca_file.write_text(fuzzed_kma.ca_pem)
    session = session_for(fuzzed_kma, ca_file)
    base_url = f"https://{fuzzed_kma.address}"
    schema = schemathesis.openapi.from_dict(session.get(f"{base_url}{API}/openapi.json").json())

    call = {"base_url": base_url, "session": session, "verify": str(ca_file), "timeout": 30}
    problems: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if (operation.method.upper(), operation.path) in LEFT_OUT:
            continue
        operations += 1
        for mode, examples in EXAMPLES.items():
            problems += fuzz(operation, mode, examples, call)
    # The run really went past sign-in: the session it used still works.
    assert session.get(f"{base_url}{API}/auth/me").status_code == 200
    session.close()  # an open keep-alive connection would hold up the KMA's shutdown
    assert operations >= 40, "the OpenAPI document lost its operations"
    assert problems == [], "\n".join(problems[:40])

    # After all that, the store and its audit trail are still sound.
    with read_only_db(fuzzed_kma) as db:
        assert [tuple(r) for r in db.execute("PRAGMA integrity_check")] == [("ok",)]
    assert fuzzed_kma.client("auditor").verify_audit_chain().intact
