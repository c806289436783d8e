-- An alert channel's MAC (kma/services/row_macs.py ALERT_CHANNELS): a channel written or altered in the
-- store without the KMA (a leaked replica or node credential) could send the cluster's warnings and
-- audit events to someone else's receiver, or silence them; such a row carries no valid MAC and is
-- not used.
ALTER TABLE alert_channels ADD COLUMN mac TEXT;
