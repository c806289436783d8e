"""An authenticator app against a KMA started with a test clock: codes for the step the KMA is in."""

from __future__ import annotations

import time

import pyotp

from kms_client import KmsClient
from tests.support.kma_process import RunningKma

STEP = 30


def kma_now(kma: RunningKma) -> int:
    assert kma.clock_file is not None
    offset = int(kma.clock_file.read_text()) if kma.clock_file.exists() else 0
    return int(time.time()) + offset


def mid_step(kma: RunningKma) -> int:
    """Moves the KMA's clock to the middle of a step (15 s from either edge, so a code computed
    here is for the step the KMA is in when it checks it); the step."""
    kma.advance_clock((15 - kma_now(kma) % STEP) % STEP)
    return kma_now(kma) // STEP


def code_now(kma: RunningKma, secret: str) -> str:
    """The authenticator's code, for the middle of the step the KMA is in."""
    return pyotp.TOTP(secret).at(mid_step(kma) * STEP)


def confirmed(kma: RunningKma, client: KmsClient) -> pyotp.TOTP:
    """The signed-in user of `client` enrolled and confirmed; their authenticator."""
    totp = pyotp.TOTP(client.enrol_second_factor().secret)
    client.confirm_second_factor(totp.at(mid_step(kma) * STEP))
    return totp
