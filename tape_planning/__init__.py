"""Planning an encrypted tape deployment from the KMS 2.0 white paper's drive measurements.

No Qt and no KMA here: ``kma plan`` and the manager's Planning area both use it, and the manager
must be able to plan before any KMA exists. See ``data/README.md`` for where every figure comes from.
"""

from __future__ import annotations

from tape_planning.plan import KMA_CAPACITY, Plan, PlanRequest, drives_needed, key_service, make_plan
from tape_planning.units import PlanError

__all__ = ["KMA_CAPACITY", "Plan", "PlanError", "PlanRequest", "drives_needed", "key_service", "make_plan"]
