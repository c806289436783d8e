-- The data units' "no key" filter from an index (issue 20: it tested every data unit for a key,
-- 0.5-0.9 s at 200,000 tapes). has_keys says whether any key row names the unit. Every batch that
-- binds a key to a unit registers the unit first (agent_keys.register_data_unit), which sets it:
-- a refused bind rolls the whole batch back, so it is set exactly when a key is bound, at no cost
-- on the Create path beyond the row that statement writes anyway. A key letting go of its unit
-- (written from the beginning of the tape) is rarer: a trigger asks again whether the unit still
-- has a key. A destroyed key still names its unit (the unit is then shredded, not keyless). Few
-- units have no key, so the partial index is small (units in a state are listed by ID).
ALTER TABLE data_units ADD COLUMN has_keys INTEGER NOT NULL DEFAULT 0;
UPDATE data_units SET has_keys = 1
    WHERE id IN (SELECT data_unit_id FROM keys WHERE data_unit_id IS NOT NULL);

CREATE TRIGGER keys_let_go_of_unit AFTER UPDATE OF data_unit_id ON keys
    WHEN OLD.data_unit_id IS NOT NULL AND OLD.data_unit_id IS NOT NEW.data_unit_id
BEGIN
    UPDATE data_units SET has_keys = EXISTS (SELECT 1 FROM keys WHERE data_unit_id = OLD.data_unit_id)
        WHERE id = OLD.data_unit_id;
END;

CREATE TRIGGER keys_deleted_from_unit AFTER DELETE ON keys WHEN OLD.data_unit_id IS NOT NULL
BEGIN
    UPDATE data_units SET has_keys = EXISTS (SELECT 1 FROM keys WHERE data_unit_id = OLD.data_unit_id)
        WHERE id = OLD.data_unit_id;
END;

CREATE INDEX data_units_no_key ON data_units(id) WHERE has_keys = 0;

-- Quorum operations: each sort the list offers together with each filter (a state, a type), so
-- the Quorum page can show pending operations by expiry, last change or type from an index.
-- Operations are few and seldom written, so the extra indexes cost nothing that matters.
CREATE INDEX pending_quorum_ops_state_expires ON pending_quorum_ops(state, expires_at, id);
CREATE INDEX pending_quorum_ops_state_updated ON pending_quorum_ops(state, updated_at, id);
CREATE INDEX pending_quorum_ops_state_type ON pending_quorum_ops(state, type, submitted_at, id);
CREATE INDEX pending_quorum_ops_type_expires ON pending_quorum_ops(type, expires_at, id);
CREATE INDEX pending_quorum_ops_type_updated ON pending_quorum_ops(type, updated_at, id);
CREATE INDEX pending_quorum_ops_type_state ON pending_quorum_ops(type, state, submitted_at, id);

-- Keys sent to each agent per day (UTC), for the Agents page's "keys this week": a handful of
-- rows per agent instead of its Get events, which a busy week makes hundreds of thousands (8 s
-- for the page at 1.15 million events). Counted by a trigger in the very transaction that
-- records each successful Get's audit event, so the count cannot drift from the trail; filled
-- once from the trail here.
CREATE TABLE agent_keys_served (
    agent_id  TEXT NOT NULL,
    day       INTEGER NOT NULL,  -- days since the epoch (UTC)
    served    INTEGER NOT NULL,
    PRIMARY KEY (agent_id, day)
) WITHOUT ROWID;
INSERT INTO agent_keys_served (agent_id, day, served)
    SELECT entity_id, created_at / 86400, count(*) FROM audit_events
    WHERE operation = 'kmip.get' AND condition = 'success' AND entity_id IS NOT NULL
    GROUP BY entity_id, created_at / 86400;
CREATE TRIGGER audit_events_keys_served AFTER INSERT ON audit_events
    WHEN NEW.operation = 'kmip.get' AND NEW.condition = 'success' AND NEW.entity_id IS NOT NULL
BEGIN
    INSERT INTO agent_keys_served (agent_id, day, served) VALUES (NEW.entity_id, NEW.created_at / 86400, 1)
        ON CONFLICT (agent_id, day) DO UPDATE SET served = served + 1;
END;
