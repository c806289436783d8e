"""The refusals' answer names each reason a write key is refused for, one field each: a reason added
to `media_rules.Refusal` without its field would be counted and never shown."""

from __future__ import annotations

from dataclasses import fields

from kma.services.media.media_refusals import MediaRefusalsRow
from kma.services.media.media_rules import Refusal


def test_the_refusals_row_has_a_field_for_each_reason() -> None:
    reasons = {f.name for f in fields(MediaRefusalsRow)} - {"cluster", "cluster_kmas"}
    assert reasons == {str(r) for r in Refusal}
