"""Two-step sign-in: the signed-in user enrols and confirms; a Security Officer turns a user's off
and sets which roles require it."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

enrol_second_factor = Write(KmsClient.enrol_second_factor, {"users"})
confirm_second_factor = Write(KmsClient.confirm_second_factor, {"users"}, "Two-step sign-in is on.")
turn_off_second_factor = Write(
    KmsClient.turn_off_second_factor, {"users", "quorum"}, "Two-step sign-in turned off."
)
set_second_factor_policy = Write(
    KmsClient.set_second_factor_policy, {"users", "quorum"}, "Two-step sign-in roles set."
)
