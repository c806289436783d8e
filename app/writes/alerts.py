"""Alert channels: add, change, remove; a test alert (its answer says whether it was delivered)."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

add_alert_channel = Write(KmsClient.add_alert_channel, {"alerts"}, "Alert channel '{0}' added.")
change_alert_channel = Write(KmsClient.change_alert_channel, {"alerts"}, "Alert channel '{1}' saved.")
remove_alert_channel = Write(KmsClient.remove_alert_channel, {"alerts"}, "Alert channel removed.")
send_test_alert = Write(KmsClient.send_test_alert, {"alerts"})
