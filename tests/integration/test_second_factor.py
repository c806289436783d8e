"""Two-step sign-in over a real KMA: a user enrols with their authenticator (the otpauth URI the
manager draws as a QR code), confirms with a first code, and from then on signs in only with a code
of the current 30-second step (or one step either side); a code is never accepted twice, a recovery
code works once, a wrong code is a failed sign-in; a Security Officer turns it off under quorum."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest

from kms_client import (
    Conflict,
    PendingQuorumOp,
    SecondFactorRequired,
    Unauthenticated,
    ValidationFailed,
)
from tests.integration.test_quorum import creds
from tests.support.kma_process import RunningKma
from tests.support.totp import STEP, mid_step


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    running = RunningKma.demo_in(tmp_path_factory.mktemp("second-factor-kma"))
    yield running
    running.stop()


def enrolled(kma: RunningKma, user: str) -> tuple[pyotp.TOTP, list[str]]:
    """`user` enrolled and confirmed; their authenticator and recovery codes."""
    client = kma.client(user)
    enrolment = client.enrol_second_factor()
    uri = urlsplit(enrolment.otpauth_uri)
    assert (uri.scheme, uri.netloc, uri.path) == ("otpauth", "totp", f"/KMS:{user}")
    assert parse_qs(uri.query)["secret"] == [enrolment.secret]
    totp = pyotp.TOTP(enrolment.secret)
    step = mid_step(kma)
    with pytest.raises(ValidationFailed, match="not the authenticator's current one"):
        client.confirm_second_factor(totp.at((step + 3) * STEP))
    assert not client.get_me().second_factor  # not on before a first code
    client.confirm_second_factor(totp.at(step * STEP))
    assert client.get_me().second_factor
    return totp, list(enrolment.recovery_codes)


def test_a_code_is_needed_once_on_and_each_code_works_once_within_the_clock_window(kma: RunningKma) -> None:
    totp, _codes = enrolled(kma, "co")
    passphrase = kma.passphrases["co"]
    with pytest.raises(SecondFactorRequired, match="code from your authenticator"):
        kma.client("co")
    kma.advance_clock(2 * STEP)  # the confirmation's step is two behind now
    step = mid_step(kma)
    with pytest.raises(Unauthenticated, match="user ID or passphrase is wrong"):  # two steps behind
        kma.client().sign_in("co", passphrase, totp.at((step - 2) * STEP))
    assert kma.client().sign_in("co", passphrase, totp.at((step - 1) * STEP)).user.id == "co"  # a slow phone
    assert kma.client().sign_in("co", passphrase, totp.at(step * STEP)).user.second_factor
    with pytest.raises(Unauthenticated):  # the same code again: seen over a shoulder, replayed
        kma.client().sign_in("co", passphrase, totp.at(step * STEP))
    assert kma.client().sign_in("co", passphrase, totp.at((step + 1) * STEP)).user.id == "co"  # a fast phone
    with pytest.raises(Unauthenticated):  # the one before the last accepted: never again either
        kma.client().sign_in("co", passphrase, totp.at(step * STEP))
    messages = [e.message for e in kma.client("auditor").iter_audit_events(operation="auth.sign_in")]
    assert any("wrong second-factor code" in m for m in messages)


def test_a_recovery_code_works_once_in_place_of_a_code(kma: RunningKma) -> None:
    _totp, codes = enrolled(kma, "backup")
    assert len(codes) == 10 and len(set(codes)) == 10
    passphrase = kma.passphrases["backup"]
    assert kma.client().sign_in("backup", passphrase, codes[0].lower()).user.id == "backup"
    with pytest.raises(Unauthenticated):
        kma.client().sign_in("backup", passphrase, codes[0])
    with pytest.raises(Unauthenticated):  # the right code with a wrong passphrase is no way in
        kma.client().sign_in("backup", "not the passphrase", codes[1])


def test_a_security_officer_turns_it_off_under_quorum_and_the_user_may_enrol_again(kma: RunningKma) -> None:
    totp, _codes = enrolled(kma, "op")
    kma.advance_clock(STEP)
    op = kma.client()
    op.sign_in("op", kma.passphrases["op"], totp.at(mid_step(kma) * STEP))
    with pytest.raises(Conflict, match="(?i)on already"):  # a second secret only once this one is off
        op.enrol_second_factor()
    so = kma.client("so")
    pending = so.turn_off_second_factor("op", credentials=creds(kma, "alice"))
    assert (
        isinstance(pending, PendingQuorumOp) and "Turn two-step sign-in off for user 'op'" in pending.summary
    )
    with pytest.raises(SecondFactorRequired):
        kma.client("op")
    assert so.turn_off_second_factor("op", credentials=creds(kma, "alice", "bob", "carol")) is None
    assert not kma.client("op").get_me().second_factor
    with pytest.raises(ValidationFailed, match="no two-step sign-in"):
        so.turn_off_second_factor("op", credentials=creds(kma, "alice", "bob", "carol"))
    enrolled(kma, "op")  # a new phone
