"""kma.toml [certificates]: durations in words a person writes, wrong ones refused with the fix, and
the warning a certificate has reached."""

from __future__ import annotations

import pytest

from kma.certificate_settings import DAY, CertificateSettings
from kma.errors import ValidationFailed
from kma.services.certificates.certificate_expiry import _level


def test_the_defaults_are_a_deployments_and_a_test_sets_seconds() -> None:
    default = CertificateSettings.from_table({})
    assert (default.kma_validity, default.agent_validity) == (1826 * DAY, 3650 * DAY)
    assert default.warn_before == (90 * DAY, 30 * DAY)
    short = CertificateSettings.from_table(
        {
            "kma_validity": "40s",
            "renew_before": "30s",
            "warn_before": ["30d", "2000d", "30d"],
            "check_every": "1s",
        }
    )
    assert (short.kma_validity, short.renew_before, short.check_every) == (40, 30, 1)
    assert short.warn_before == (2000 * DAY, 30 * DAY)  # longest first, once each


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"agent_validity": "ten years"}, "agent_validity must be a positive duration"),
        ({"agent_validity": "0d"}, "agent_validity must be a positive duration"),
        ({"agent_validity": 3650}, "agent_validity must be a positive duration"),
        ({"warn_before": "90d"}, "warn_before is a list"),
        ({"warn_before": []}, "warn_before is a list"),
        ({"kma_validity": "1h", "renew_before": "2h"}, "renew_before must be shorter than kma_validity"),
        ({"kma_validty": "5y"}, "unknown setting 'kma_validty'"),
        ({"ca_validity": "1y", "ca_renew_before": "2y"}, "ca_renew_before must be shorter than ca_validity"),
    ],
)
def test_a_wrong_setting_is_refused_with_the_fix(table: dict[str, object], says: str) -> None:
    with pytest.raises(ValidationFailed, match=says):
        CertificateSettings.from_table(table)


def test_a_certificate_reaches_the_nearest_warning_then_expiry() -> None:
    warn = (90 * DAY, 30 * DAY)
    assert _level(91 * DAY, warn) is None
    assert _level(90 * DAY, warn) == 90 * DAY
    assert _level(29 * DAY, warn) == 30 * DAY
    assert _level(0, warn) == 0
    assert _level(-5, warn) == 0
