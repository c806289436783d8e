"""Who is doing something: a signed-in user, an enrolled agent, or the KMA itself."""

from __future__ import annotations

from dataclasses import dataclass, field

from kma.domain.roles import Role


@dataclass(frozen=True)
class Actor:
    entity_id: str
    address: str
    kind: str = "user"  # user | agent | kma
    roles: frozenset[Role] = field(default_factory=frozenset)
    # A user whose roles require a second factor they have not enrolled: may only enrol one
    # (kma/services/sign_in/second_factor_policy.py); every permission check refuses them.
    second_factor_pending: bool = False
