"""A refusal is answered in the words of the client's KMIP version: a reason a later version added
reaches an older client as the one its own version has for it."""

from __future__ import annotations

from kma.kmip.enums import ResultReason
from kma.kmip.messages import KmipError


def test_a_destroyed_keys_get_is_answered_in_each_versions_words() -> None:
    destroyed = KmipError(
        ResultReason.KEY_VALUE_NOT_PRESENT, "key K was destroyed", v2_reason=ResultReason.OBJECT_DESTROYED
    )
    said = {version: destroyed.reason_in(version) for version in ((1, 0), (1, 1), (1, 2), (1, 4), (2, 0))}
    assert said == {
        (1, 0): ResultReason.ITEM_NOT_FOUND,  # Key Value Not Present came in 1.2
        (1, 1): ResultReason.ITEM_NOT_FOUND,
        (1, 2): ResultReason.KEY_VALUE_NOT_PRESENT,
        (1, 4): ResultReason.KEY_VALUE_NOT_PRESENT,
        (2, 0): ResultReason.OBJECT_DESTROYED,
    }


def test_an_encoding_option_refusal_reaches_a_1_0_client_as_feature_not_supported() -> None:
    refused = KmipError(ResultReason.ENCODING_OPTION_ERROR, "only the No Encoding option is supported")
    assert refused.reason_in((1, 0)) == ResultReason.FEATURE_NOT_SUPPORTED
    assert refused.reason_in((1, 1)) == ResultReason.ENCODING_OPTION_ERROR
