-- The lists' search indexes built in the background (issue 33): the triggers of 0035 indexed each
-- new row in the writing transaction, ~57 us of a KMIP Create (the new tape's data unit). Now each
-- index holds exactly the rows of its table up to a mark (text_index_marks), as the audit trail's
-- does since 0005: the store's writer indexes the rows above it in chunks when idle
-- (kma/store/fts.py), and searches match that tail directly, by LIKE (kma/services/paging.py).
-- An insert touches no index. A change or delete of an indexed row (a management write, rare)
-- keeps its index in step at once, so no search shows a stale match; of a row above the mark it
-- touches nothing, since the indexer reads the row as it is then. When the newest rows go, the
-- mark comes down to the newest left, so a re-used rowid is never taken for indexed.
--
-- Every index is complete here (0035's triggers): each mark starts at its table's newest row, and
-- nothing is rebuilt (on rqlite, one migration is one Raft entry). In a cluster whose older KMAs
-- still run 0035's code, those find a new row by search once a KMA of this release indexed it.

CREATE TABLE text_index_marks (
    name        TEXT PRIMARY KEY,   -- the FTS5 table
    indexed_to  INTEGER NOT NULL    -- the newest rowid of its table that it holds, and all before
);

INSERT INTO text_index_marks (name, indexed_to) SELECT 'keys_text', coalesce(max(rowid), 0) FROM keys;
DROP TRIGGER keys_text_insert;
DROP TRIGGER keys_text_delete;
DROP TRIGGER keys_text_update;
CREATE TRIGGER keys_text_delete AFTER DELETE ON keys BEGIN
    INSERT INTO keys_text (keys_text, rowid, id) SELECT 'delete', OLD.rowid, OLD.id
    WHERE OLD.rowid <= (SELECT indexed_to FROM text_index_marks WHERE name = 'keys_text');
    UPDATE text_index_marks SET indexed_to = (SELECT coalesce(max(rowid), 0) FROM keys)
    WHERE name = 'keys_text' AND indexed_to > (SELECT coalesce(max(rowid), 0) FROM keys);
END;
CREATE TRIGGER keys_text_update AFTER UPDATE OF id ON keys
WHEN OLD.rowid <= (SELECT indexed_to FROM text_index_marks WHERE name = 'keys_text') BEGIN
    INSERT INTO keys_text (keys_text, rowid, id) VALUES ('delete', OLD.rowid, OLD.id);
    INSERT INTO keys_text (rowid, id) VALUES (NEW.rowid, NEW.id);
END;

INSERT INTO text_index_marks (name, indexed_to) SELECT 'data_units_text', coalesce(max(rowid), 0) FROM data_units;
DROP TRIGGER data_units_text_insert;
DROP TRIGGER data_units_text_delete;
DROP TRIGGER data_units_text_update;
CREATE TRIGGER data_units_text_delete AFTER DELETE ON data_units BEGIN
    INSERT INTO data_units_text (data_units_text, rowid, id, description) SELECT 'delete', OLD.rowid, OLD.id, OLD.description
    WHERE OLD.rowid <= (SELECT indexed_to FROM text_index_marks WHERE name = 'data_units_text');
    UPDATE text_index_marks SET indexed_to = (SELECT coalesce(max(rowid), 0) FROM data_units)
    WHERE name = 'data_units_text' AND indexed_to > (SELECT coalesce(max(rowid), 0) FROM data_units);
END;
CREATE TRIGGER data_units_text_update AFTER UPDATE OF id, description ON data_units
WHEN OLD.rowid <= (SELECT indexed_to FROM text_index_marks WHERE name = 'data_units_text') BEGIN
    INSERT INTO data_units_text (data_units_text, rowid, id, description) VALUES ('delete', OLD.rowid, OLD.id, OLD.description);
    INSERT INTO data_units_text (rowid, id, description) VALUES (NEW.rowid, NEW.id, NEW.description);
END;

INSERT INTO text_index_marks (name, indexed_to) SELECT 'agents_text', coalesce(max(rowid), 0) FROM agents;
DROP TRIGGER agents_text_insert;
DROP TRIGGER agents_text_delete;
DROP TRIGGER agents_text_update;
CREATE TRIGGER agents_text_delete AFTER DELETE ON agents BEGIN
    INSERT INTO agents_text (agents_text, rowid, id, description, site_id) SELECT 'delete', OLD.rowid, OLD.id, OLD.description, OLD.site_id
    WHERE OLD.rowid <= (SELECT indexed_to FROM text_index_marks WHERE name = 'agents_text');
    UPDATE text_index_marks SET indexed_to = (SELECT coalesce(max(rowid), 0) FROM agents)
    WHERE name = 'agents_text' AND indexed_to > (SELECT coalesce(max(rowid), 0) FROM agents);
END;
CREATE TRIGGER agents_text_update AFTER UPDATE OF id, description, site_id ON agents
WHEN OLD.rowid <= (SELECT indexed_to FROM text_index_marks WHERE name = 'agents_text') BEGIN
    INSERT INTO agents_text (agents_text, rowid, id, description, site_id) VALUES ('delete', OLD.rowid, OLD.id, OLD.description, OLD.site_id);
    INSERT INTO agents_text (rowid, id, description, site_id) VALUES (NEW.rowid, NEW.id, NEW.description, NEW.site_id);
END;

INSERT INTO text_index_marks (name, indexed_to) SELECT 'users_text', coalesce(max(rowid), 0) FROM users;
DROP TRIGGER users_text_insert;
DROP TRIGGER users_text_delete;
DROP TRIGGER users_text_update;
CREATE TRIGGER users_text_delete AFTER DELETE ON users BEGIN
    INSERT INTO users_text (users_text, rowid, id, name) SELECT 'delete', OLD.rowid, OLD.id, OLD.name
    WHERE OLD.rowid <= (SELECT indexed_to FROM text_index_marks WHERE name = 'users_text');
    UPDATE text_index_marks SET indexed_to = (SELECT coalesce(max(rowid), 0) FROM users)
    WHERE name = 'users_text' AND indexed_to > (SELECT coalesce(max(rowid), 0) FROM users);
END;
CREATE TRIGGER users_text_update AFTER UPDATE OF id, name ON users
WHEN OLD.rowid <= (SELECT indexed_to FROM text_index_marks WHERE name = 'users_text') BEGIN
    INSERT INTO users_text (users_text, rowid, id, name) VALUES ('delete', OLD.rowid, OLD.id, OLD.name);
    INSERT INTO users_text (rowid, id, name) VALUES (NEW.rowid, NEW.id, NEW.name);
END;

INSERT INTO text_index_marks (name, indexed_to) SELECT 'pending_quorum_ops_text', coalesce(max(rowid), 0) FROM pending_quorum_ops;
DROP TRIGGER pending_quorum_ops_text_insert;
DROP TRIGGER pending_quorum_ops_text_delete;
DROP TRIGGER pending_quorum_ops_text_update;
CREATE TRIGGER pending_quorum_ops_text_delete AFTER DELETE ON pending_quorum_ops BEGIN
    INSERT INTO pending_quorum_ops_text (pending_quorum_ops_text, rowid, id, summary, type, requested_by) SELECT 'delete', OLD.rowid, OLD.id, OLD.summary, OLD.type, OLD.requested_by
    WHERE OLD.rowid <= (SELECT indexed_to FROM text_index_marks WHERE name = 'pending_quorum_ops_text');
    UPDATE text_index_marks SET indexed_to = (SELECT coalesce(max(rowid), 0) FROM pending_quorum_ops)
    WHERE name = 'pending_quorum_ops_text' AND indexed_to > (SELECT coalesce(max(rowid), 0) FROM pending_quorum_ops);
END;
CREATE TRIGGER pending_quorum_ops_text_update AFTER UPDATE OF id, summary, type, requested_by ON pending_quorum_ops
WHEN OLD.rowid <= (SELECT indexed_to FROM text_index_marks WHERE name = 'pending_quorum_ops_text') BEGIN
    INSERT INTO pending_quorum_ops_text (pending_quorum_ops_text, rowid, id, summary, type, requested_by) VALUES ('delete', OLD.rowid, OLD.id, OLD.summary, OLD.type, OLD.requested_by);
    INSERT INTO pending_quorum_ops_text (rowid, id, summary, type, requested_by) VALUES (NEW.rowid, NEW.id, NEW.summary, NEW.type, NEW.requested_by);
END;
