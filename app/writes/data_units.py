"""Data units: create, change, issue a key for one."""

from __future__ import annotations

from app.operations import OpContext
from app.writes import Write
from kms_client import DataUnit, KmsClient

create_data_unit = Write(KmsClient.create_data_unit, {"data_units"}, "Data unit {0} created.")
update_data_unit = Write(KmsClient.update_data_unit, {"data_units"}, "Data unit {0} saved.")


def _issue_key(worker: OpContext, key_group_id: str, data_unit_id: str) -> DataUnit:
    """Issue a key of the group for the data unit; the unit as it now is (its state changed)."""
    worker.client.issue_key(key_group_id, data_unit_id)
    return worker.client.get_data_unit(data_unit_id)


issue_key = Write(_issue_key, {"keys", "data_units"}, "Key issued for data unit {1}.")
