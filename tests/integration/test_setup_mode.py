"""First set-up over the network (issue 13): `kma serve` on an empty data directory waits in
set-up mode, answers only its set-up API, and becomes a normal KMA when set-up finishes.

Given a real `kma serve` on an empty directory, over TLS with its temporary certificate, each
refusal a wizard must show on the page where it was typed comes back with its reason, nothing is
written before the last step, the set-up code works once, and the same answers run headless by
`kma init --answers` make the same KMA.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kms_client import NotSetUp, Trust, Unauthenticated, ValidationFailed
from kms_client.setup import SetupClient
from tests.support.agents import service_address
from tests.support.first_setup import (
    MEMBERS,
    OFFICER,
    answers_for,
    answers_toml,
    describe,
    written,
)
from tests.support.kma_process import RunningKma, run_kma
from tests.support.ports import free_port


@pytest.fixture
def waiting(tmp_path: Path) -> Iterator[RunningKma]:
    kma = RunningKma.awaiting_setup(tmp_path)
    yield kma
    kma.stop()


def connect(kma: RunningKma, code: str | None = None) -> SetupClient:
    trust = Trust.fetch(kma.address)
    assert trust.fingerprint == kma.setup["ca_fingerprint"]
    return SetupClient(kma.address, trust, code or kma.setup["setup_code"])


def test_the_console_and_the_log_show_the_fingerprint_and_the_code(waiting: RunningKma) -> None:
    log = waiting.log_text()
    assert f"set-up code {waiting.setup['setup_code']}" in log
    assert f"temporary certificate fingerprint {waiting.setup['ca_fingerprint']}" in log
    assert written(waiting) == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/status"),
        ("POST", "/api/v1/auth/sign-in"),
        ("GET", "/api/v1/keys"),
        ("GET", "/api/v1/users"),
        ("POST", "/api/v1/kmas/kma-1/unlock"),
        ("GET", "/api/v1/openapi.json"),
        ("GET", "/"),
        ("DELETE", "/api/v1/setup"),
    ],
)
def test_set_up_mode_refuses_every_other_route(waiting: RunningKma, method: str, path: str) -> None:
    trust = Trust.fetch(waiting.address)
    from kms_client.trust import ssl_context_for

    with httpx.Client(verify=ssl_context_for(trust.ca_pem)) as http:
        response = http.request(
            method,
            f"https://{waiting.address}{path}",
            json={},
            headers={"X-Setup-Code": waiting.setup["setup_code"]},
        )
    assert response.status_code in (503, 405)
    if response.status_code == 503:
        assert response.json()["error"]["code"] == "setup_mode"


def test_each_refusal_comes_back_with_its_reason(waiting: RunningKma) -> None:
    with connect(waiting, "WRONG-CODE-0000") as wrong:
        with pytest.raises(Unauthenticated, match="not the set-up code"):
            wrong.check_code()
    setup = connect(waiting)
    setup.check_code()
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        with pytest.raises(ValidationFailed, match="already in use on the KMA"):
            setup.check_network(waiting.address, f"127.0.0.1:{busy.getsockname()[1]}")
    finally:
        busy.close()
    with pytest.raises(ValidationFailed, match="needs a port number"):
        setup.check_network(waiting.address, "127.0.0.1:0")
    setup.check_network(waiting.address, f"127.0.0.1:{free_port()}")  # its own port is fine
    for threshold, members, reason in [
        (4, MEMBERS, "cannot exceed the number of members"),
        (0, MEMBERS, "at least 1"),
        (2, [(f"m{i}", f"member {i} rides a blue tram") for i in range(11)], "at most 10 members"),
        (2, [*MEMBERS[:2], ("carol", "password1")], "guessable"),
    ]:
        with pytest.raises(ValidationFailed, match=reason):
            setup.draft_key_split(threshold, members)
    proof_members = setup.draft_key_split(2, MEMBERS)
    assert len(proof_members) == 2 and set(proof_members) <= {n for n, _ in MEMBERS}
    with pytest.raises(ValidationFailed, match="has not been proven"):
        setup.finish(answers_for(waiting.address, free_port()))
    with pytest.raises(ValidationFailed, match=f"the passphrase typed for '{proof_members[0]}'"):
        setup.prove(
            [(proof_members[0], "not what they chose"), (proof_members[1], dict(MEMBERS)[proof_members[1]])]
        )
    assert written(waiting) == []  # nothing written before the last step


def test_set_up_over_the_network_then_the_kma_serves_normally(waiting: RunningKma, tmp_path: Path) -> None:
    with connect(waiting, "WRONG-CODE-1111") as wrong, pytest.raises(Unauthenticated):
        wrong.check_code()
    setup = connect(waiting)
    proof_members = setup.draft_key_split(2, MEMBERS)
    check = setup.prove([(name, dict(MEMBERS)[name]) for name in proof_members])
    assert len(check) == 9
    # Started with --service-port 0, it picked its service port before set-up and says which: the
    # wizard offers it, and the 5696 typed anyway is not what kma.toml, its entry and the last page say
    picked = setup.state()["service_port"]
    assert isinstance(picked, int) and picked not in (0, 5696)
    made = setup.finish(answers_for(waiting.address, 5696))
    assert made.management_address == waiting.address  # it continues where the wizard connected
    assert made.service_address == f"127.0.0.1:{picked}"

    waiting.wait_ready(set_up=True)
    assert service_address(waiting) == made.service_address  # where it listens
    assert f'service_address = "{made.service_address}"' in (waiting.data_dir / "kma.toml").read_text()
    assert waiting.fingerprint == made.ca_fingerprint != waiting.setup.get("ca_fingerprint")
    officer = waiting.client("so", OFFICER["passphrase"])
    assert officer.get_me().roles == ("security_officer",) or "security_officer" in officer.get_me().roles
    # The code worked once: the set-up API is gone with set-up mode.
    with connect_raw(waiting) as http:
        assert http.post("/api/v1/setup/code", headers={"X-Setup-Code": "x"}).status_code == 404
    events = [e.operation for e in officer.iter_all(officer.list_audit_events)]
    assert "setup.code_refused" in events and "cluster.create" in events
    assert officer.get_kma("kma-dal-1").service_address == made.service_address  # agents are sent there
    # Then the same answers, headless: the same KMA.
    headless = tmp_path / "headless"
    (tmp_path / "answers.toml").write_text(answers_toml(answers_for("127.0.0.1:8443", 5696)))
    run_kma("init", "--data-dir", str(headless / "kma"), "--answers", str(tmp_path / "answers.toml"))
    other = RunningKma(headless / "kma")
    other.start()
    try:
        so = other.client("so", OFFICER["passphrase"])
        so.unlock_kma("kma-dal-1", credentials=MEMBERS[:2])  # autonomous unlock off: it starts locked
        assert describe(so) == describe(officer)
    finally:
        other.stop()


def code_from(kma: RunningKma, address: str, code: str) -> httpx.Response:
    """POST /setup/code from a source address of the test's choosing."""
    from kms_client.trust import ssl_context_for

    transport = httpx.HTTPTransport(
        verify=ssl_context_for(Trust.fetch(kma.address).ca_pem), local_address=address
    )
    with httpx.Client(base_url=f"https://{kma.address}", transport=transport) as http:
        return http.post("/api/v1/setup/code", headers={"X-Setup-Code": code})


def test_wrong_codes_lock_out_their_address_and_the_code_keeps_working(waiting: RunningKma) -> None:
    """A stranger failing again and again is locked out; the installer's code still works from
    their own workstation (issue 26, item 6). Every wrong try is counted, in bounded events and log."""
    statuses = [code_from(waiting, "127.0.0.77", f"WRONG-CODE-{n:04}").status_code for n in range(30)]
    assert statuses == [401] * 4 + [429] * 26
    assert "locked out" in code_from(waiting, "127.0.0.77", "WRONG-CODE-0000").json()["error"]["message"]
    assert code_from(waiting, "127.0.0.77", waiting.setup["setup_code"]).status_code == 429  # locked there
    assert code_from(waiting, "127.0.0.1", waiting.setup["setup_code"]).status_code == 200  # not here
    assert "New set-up code" not in waiting.log_text()
    assert waiting.log_text().count("127.0.0.77") == 5, "each wrong try became a log line"  # 4, locked

    setup = connect(waiting)
    proof_members = setup.draft_key_split(2, MEMBERS)
    setup.prove([(name, dict(MEMBERS)[name]) for name in proof_members])
    setup.finish(answers_for(waiting.address, free_port()))
    waiting.wait_ready(set_up=True)
    auditor = waiting.client("so", OFFICER["passphrase"])
    refused = [e for e in auditor.iter_all(auditor.list_audit_events) if e.operation == "setup.code_refused"]
    assert [e.message for e in refused] == ["32 wrong set-up codes from 127.0.0.77"]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"key_pool_size": 10**9}, "key_pool_size must be a whole number from 0 to 100,000"),
        ({"key_pool_size": -5}, "key_pool_size must be a whole number from 0 to 100,000"),
        ({"mode": "join"}, "mode 'join' has its own step"),
        ({"mode": "restore"}, "mode 'restore' has its own step"),
    ],
)
def test_a_finish_is_checked_as_the_answers_file_is_and_writes_nothing(
    waiting: RunningKma, change: dict[str, Any], reason: str
) -> None:
    setup = connect(waiting)
    proof_members = setup.draft_key_split(2, MEMBERS)
    setup.prove([(name, dict(MEMBERS)[name]) for name in proof_members])
    with pytest.raises(ValidationFailed, match=reason):
        setup.finish({**answers_for(waiting.address, free_port()), **change})
    assert written(waiting) == [] and not list(waiting.data_dir.parent.glob(".*"))
    setup.finish(answers_for(waiting.address, free_port()))  # the right answers still work
    waiting.wait_ready(set_up=True)


def test_stopping_in_set_up_mode_leaves_it_not_set_up(waiting: RunningKma) -> None:
    setup = connect(waiting)
    setup.draft_key_split(2, MEMBERS)
    waiting.stop()
    assert written(waiting) == []
    waiting.start()
    assert waiting.setup["mode"] == "setup"
    with pytest.raises(NotSetUp):
        waiting.client().sign_in("so", "anything at all")  # the manager finds a KMA not set up yet


def connect_raw(kma: RunningKma) -> httpx.Client:
    from kms_client.trust import ssl_context_for

    return httpx.Client(base_url=f"https://{kma.address}", verify=ssl_context_for(kma.ca_pem))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda t: t.replace('passphrase = "alice walks the long pier"\n', ""), "leave out passphrases"),
        (lambda t: t.replace('mode = "new_cluster"', 'mode = "clone"'), "cannot set itself up as 'clone'"),
        (lambda t: t.replace("alice walks the long pier", "password1"), "guessable"),
        (
            lambda t: t.replace("officer keeps the vault", "password1"),
            "Officer's passphrase is too guessable",
        ),
        (lambda t: t.replace("threshold = 2", "threshold = 4"), "cannot exceed the number of members"),
    ],
)
def test_kma_init_refuses_bad_answers_with_the_reason_and_writes_nothing(
    tmp_path: Path, change: Any, reason: str
) -> None:
    answers = tmp_path / "answers.toml"
    answers.write_text(change(answers_toml(answers_for("127.0.0.1:8443", 5696))))
    done = run_kma("init", "--data-dir", str(tmp_path / "kma"), "--answers", str(answers), check=False)
    assert done.returncode != 0
    assert reason in done.stderr
    assert not (tmp_path / "kma" / "kma.db").exists()
