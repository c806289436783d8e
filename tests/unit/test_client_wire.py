"""kms_client/wire.py (the answers) and kms_client/calls.py (the calls) are generated from the KMA's
OpenAPI document (scripts/generate-client-models.py), answers read by one reader: a schema or route
changed in kma/api without regenerating fails here, and the reader keeps what the GUI relies on
(aware times, tuples, a newer KMA's extra fields ignored)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

from kms_client import Kma, Page, PendingQuorumOp, Session, read
from kms_client.reader import read_page
from tests.support.model_generator import CALLS, WIRE, model_generator

T0 = "2026-11-21T07:40:00Z"
KMA = {
    "id": "kma1",
    "name": "Dallas 1",
    "site_id": "dallas",
    "management_address": "10.0.0.1:8443",
    "service_address": "10.0.0.1:3001",
    "version": "0.1.0",
    "locked": False,
    "key_pool_size": 1000,
    "pool_ready": 998,
    "created_at": T0,
}


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return model_generator()


def test_the_checked_in_models_are_generated_from_the_kmas_document(generator: ModuleType) -> None:
    generated = generator.render(generator.served_document())
    assert WIRE.read_text(encoding="utf-8") == generated, (
        "kms_client/wire.py is stale: run scripts/generate-client-models.py"
    )


def test_the_checked_in_calls_are_generated_from_the_kmas_document(generator: ModuleType) -> None:
    generated = generator.render_calls(generator.served_document())
    assert CALLS.read_text(encoding="utf-8") == generated, (
        "kms_client/calls.py is stale: run scripts/generate-client-models.py"
    )


def test_the_check_fails_on_stale_calls(
    generator: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A route renamed (or added) without regenerating: the check names the method it lacks."""
    stale = tmp_path / "calls.py"
    stale.write_text(CALLS.read_text().replace("def approve_quorum_operation(", "def approve_operation("))
    monkeypatch.setattr(generator, "CALLS", stale)
    monkeypatch.setattr("sys.argv", ["generate-client-models.py", "--check"])
    assert generator.main() == 1
    assert "+    def approve_quorum_operation(" in capsys.readouterr().out


def test_the_check_fails_on_a_stale_module(
    generator: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "wire.py"
    stale.write_text(WIRE.read_text().replace("    pool_ready: int\n", ""))
    monkeypatch.setattr(generator, "TARGET", stale)
    monkeypatch.setattr("sys.argv", ["generate-client-models.py", "--check"])
    assert generator.main() == 1
    assert "+    pool_ready: int" in capsys.readouterr().out


def test_a_newer_kmas_extra_fields_are_ignored_and_times_are_aware() -> None:
    kma = read(Kma, {**KMA, "a_field_from_a_newer_kma": {"x": 1}, "removed_at": "2026-11-22T00:00:00"})
    assert kma.created_at == datetime(2026, 11, 21, 7, 40, tzinfo=UTC)
    assert kma.removed_at == datetime(2026, 11, 22, tzinfo=UTC)  # no offset: UTC, as the contract says
    assert (kma.voter, kma.witness, kma.raft_address) == (True, False, "")  # the schema's defaults


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({**KMA, "pool_ready": "998"}, TypeError),
        ({**KMA, "locked": 0}, TypeError),
        ({**KMA, "key_pool_size": True}, TypeError),
        ({k: v for k, v in KMA.items() if k != "name"}, KeyError),
        ({**KMA, "created_at": "yesterday"}, ValueError),
    ],
)
def test_an_answer_of_the_wrong_shape_is_refused(answer: dict[str, object], problem: type[Exception]) -> None:
    with pytest.raises(problem):
        read(Kma, answer)


def test_pages_lists_and_nested_objects_are_read_by_type() -> None:
    page = read_page(Kma, {"items": [KMA], "next_cursor": None, "total": 1})
    assert page == Page(items=[read(Kma, KMA)], next_cursor=None, total=1)
    answer = {
        "id": "op1",
        "type": "change_key_split",
        "summary": "2 of 3",
        "request": {"threshold": 2},
        "requested_by": "so1",
        "submitted_at": T0,
        "updated_at": T0,
        "expires_at": "2026-11-22T07:40:00Z",
        "state": "pending",
        "approvals_needed": 2,
        "result": None,
        "approvals": [{"member": "alice", "approved_by": "so1", "approved_at": "2026-11-21T07:41:00Z"}],
        "enrolment": [{"member": "dave", "enrolled_at": None, "enrolled_from": None}],
    }
    op = read(PendingQuorumOp, answer)
    assert op.approvals[0].approved_at.tzinfo is UTC
    assert isinstance(op.enrolment, tuple)
    assert (op.pending, op.awaiting_enrolment) == (True, ("dave",))  # behaviour.py's helpers


def test_a_session_token_stays_out_of_repr() -> None:
    user = {
        "id": "so1",
        "name": "S",
        "roles": ["security_officer"],
        "enabled": True,
        "locked_until": None,
        "created_at": T0,
        "updated_at": T0,
    }
    session = read(Session, {"token": "s3cret", "expires_at": "2026-11-21T08:40:00Z", "user": user})
    assert session.token == "s3cret" and "s3cret" not in repr(session)


def test_the_client_needs_neither_the_kma_nor_pydantic() -> None:
    """The manager ships without the KMA: its models are generated, not imported from kma/api."""
    probe = "import sys, kms_client; print(' '.join(sorted(sys.modules)))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = run.stdout.split()
    assert not [m for m in loaded if m.split(".")[0] in {"kma", "pydantic", "fastapi"}]
