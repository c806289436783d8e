"""Data units: create, change, issue a key for one."""

from __future__ import annotations

from typing import Any

from app.operations import OpContext
from kms_client import DataUnit


def create_data_unit(worker: OpContext, id: str, description: str | None = None) -> DataUnit:
    return worker.client.create_data_unit(id, description)


def issue_key(worker: OpContext, key_group_id: str, data_unit_id: str) -> DataUnit:
    """Issue a key of the group for the data unit; the unit as it now is (its state changed)."""
    worker.client.issue_key(key_group_id, data_unit_id)
    return worker.client.get_data_unit(data_unit_id)


def update_data_unit(worker: OpContext, id: str, **options: Any) -> DataUnit:
    return worker.client.update_data_unit(id, **options)
