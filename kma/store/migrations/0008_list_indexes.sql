-- Every list the manager pages answers its first page, each sort and each filter it offers from
-- an index, at a million rows (issue 20; tests/integration/test_list_plans.py checks the plans).
-- An index ends with the list's order (sort column(s), then id), so a filtered page is read in
-- order straight off it and stops after one page: no sort of every match.

-- Keys. The default order is newest activation first; a key's state is a condition on its times
-- (kma/domain/lifecycle.py), served by ranges of activated_at (Ready keys have none: NULL).
DROP INDEX keys_activated;
CREATE INDEX keys_activated ON keys(activated_at, id);
DROP INDEX keys_data_unit;
CREATE INDEX keys_data_unit ON keys(data_unit_id, activated_at, id);
DROP INDEX keys_group;
CREATE INDEX keys_group ON keys(key_group_id, activated_at, id);
CREATE INDEX keys_agent ON keys(agent_id, activated_at, id);
-- Few keys are compromised or destroyed: each filter walks only its own small index.
CREATE INDEX keys_compromised ON keys(activated_at, id) WHERE compromised_at IS NOT NULL;
CREATE INDEX keys_destroyed ON keys(activated_at, id) WHERE destroyed_at IS NOT NULL;

CREATE INDEX data_units_created ON data_units(created_at, id);

CREATE INDEX agents_site ON agents(site_id, id);
CREATE INDEX agents_created ON agents(created_at, id);

CREATE INDEX users_name ON users(name, id);
CREATE INDEX users_created ON users(created_at, id);

CREATE INDEX pending_quorum_ops_state_submitted ON pending_quorum_ops(state, submitted_at, id);
CREATE INDEX pending_quorum_ops_type ON pending_quorum_ops(type, submitted_at, id);
CREATE INDEX pending_quorum_ops_expires ON pending_quorum_ops(expires_at, id);
CREATE INDEX pending_quorum_ops_updated ON pending_quorum_ops(updated_at, id);
