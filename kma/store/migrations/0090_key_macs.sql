-- A key row's MAC (kma/services/key_macs.py): a key moved to another key group or data unit, or
-- given another owner or state, by a write into the store without the KMA (a stolen node credential,
-- a replica file) carries no valid MAC and is served to nobody. Keys from before are sealed at the
-- first unlock on this version.
ALTER TABLE keys ADD COLUMN mac TEXT;
