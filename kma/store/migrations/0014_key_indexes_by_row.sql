-- The key list indexes of 0008/0013 without the key ID at their end, and without pool keys where
-- a list never needs them (issue 20: they cost the Create path about 25%). Every issued key is a
-- pool insert and then an update that moves it between index entries; an entry ending in the
-- random hex ID landed at a random place in each index, and pool keys (no group, agent or
-- deactivation time) had entries in indexes no list reads them from. The lists now break ties in
-- their sort by the row's own number (rowid, which every index already ends with: kma/services/
-- keys.py), so a new key's entries are appended, and the group, agent and deactivation indexes
-- hold issued keys only (a filter on them names a value, which a pool key never has).
DROP INDEX keys_activated;
CREATE INDEX keys_activated ON keys(activated_at);
DROP INDEX keys_created;
CREATE INDEX keys_created ON keys(created_at);
DROP INDEX keys_data_unit;
CREATE INDEX keys_data_unit ON keys(data_unit_id, activated_at);
DROP INDEX keys_group;
CREATE INDEX keys_group ON keys(key_group_id, activated_at) WHERE key_group_id IS NOT NULL;
DROP INDEX keys_agent;
CREATE INDEX keys_agent ON keys(agent_id, activated_at) WHERE agent_id IS NOT NULL;
DROP INDEX keys_compromised;
CREATE INDEX keys_compromised ON keys(activated_at) WHERE compromised_at IS NOT NULL;
DROP INDEX keys_destroyed;
CREATE INDEX keys_destroyed ON keys(activated_at) WHERE destroyed_at IS NOT NULL;
DROP INDEX keys_deactivated;
CREATE INDEX keys_deactivated ON keys(deactivate_at) WHERE destroyed_at IS NULL AND deactivate_at IS NOT NULL;
