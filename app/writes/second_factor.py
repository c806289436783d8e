"""Two-step sign-in: the signed-in user enrols and confirms; a Security Officer turns a user's off."""

from __future__ import annotations

from app.writes import Write

enrol_second_factor = Write("enrol_second_factor", {"users"})
confirm_second_factor = Write("confirm_second_factor", {"users"}, "Two-step sign-in is on.")
turn_off_second_factor = Write("turn_off_second_factor", {"users", "quorum"}, "Two-step sign-in turned off.")
