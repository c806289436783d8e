"""How long the certificates a KMA issues last, and when it warns and renews: `[certificates]` in
kma.toml. Each value is a whole number and a unit (s, m, h, d or y; a year is 365 days), e.g.

    [certificates]
    kma_validity = "5y"          # a KMA's listener and node certificates, when issued or renewed
    agent_validity = "10y"       # an agent's certificate, at enrollment
    warn_before = ["90d", "30d"] # a warning (and an audit event) as each of these is reached
    renew_before = "180d"        # a KMA renews its own listener certificate this long before it expires
    check_every = "1h"           # how often a KMA looks at its certificates
    ca_validity = "20y"          # the cluster CA's certificate, when renewed (services/certificates/)
    ca_renew_before = "5y"       # the cluster renews its CA certificate this long before it expires

The defaults suit a deployment; a test sets minutes or seconds so that real TLS handshakes see
certificates expire and renew on the real clock. docs/security.md says what each lasts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any

from kma.errors import ValidationFailed

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}
_DURATION = re.compile(r"^\s*(\d+)\s*([smhdy])\s*$")
DAY = 86400
_SETTINGS = "kma.toml [certificates]"


def duration(value: Any, name: str) -> int:
    """Seconds of a duration such as "90d"; a clear error names the setting."""
    found = _DURATION.match(value) if isinstance(value, str) else None
    seconds = int(found[1]) * UNITS[found[2]] if found else 0
    if seconds <= 0:
        raise ValidationFailed(
            f'{_SETTINGS}: {name} must be a positive duration such as "30d", "12h" or "5y", not {value!r}.'
        )
    return seconds


@dataclass(frozen=True)
class CertificateSettings:
    kma_validity: int = 5 * 365 * DAY + DAY
    agent_validity: int = 3650 * DAY
    warn_before: tuple[int, ...] = (90 * DAY, 30 * DAY)  # longest first
    renew_before: int = 180 * DAY
    check_every: int = 3600
    ca_validity: int = 20 * 365 * DAY + 5 * DAY
    ca_renew_before: int = 5 * 365 * DAY

    @classmethod
    def from_table(cls, table: dict[str, Any]) -> CertificateSettings:
        """The `[certificates]` table; a wrong name or value is refused, with the fix."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(table) - set(known))
        if unknown:
            raise ValidationFailed(
                f"{_SETTINGS}: unknown setting {unknown[0]!r}; the settings are {', '.join(known)}."
            )
        values: dict[str, Any] = {}
        for name, value in table.items():
            if name == "warn_before":
                if not isinstance(value, list) or not value:
                    raise ValidationFailed(
                        f'{_SETTINGS}: warn_before is a list of durations, e.g. ["90d", "30d"].'
                    )
                values[name] = tuple(sorted({duration(v, name) for v in value}, reverse=True))
            else:
                values[name] = duration(value, name)
        settings = cls(**values)
        if settings.renew_before >= settings.kma_validity:
            raise ValidationFailed(
                f"{_SETTINGS}: renew_before must be shorter than kma_validity, or a KMA would renew "
                "its certificate as soon as it has it."
            )
        if settings.ca_renew_before >= settings.ca_validity:
            raise ValidationFailed(
                f"{_SETTINGS}: ca_renew_before must be shorter than ca_validity, or the cluster would "
                "renew its CA certificate as soon as it has it."
            )
        return settings
