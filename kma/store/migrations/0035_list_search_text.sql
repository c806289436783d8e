-- Search in the lists from an index (issue 33: the keys list's `q` walked a million keys, ~1 s).
-- What people type is an ID, a volser, a prefix or a fragment of a name: a substring. FTS5's
-- trigram tokenizer indexes every three characters of a value, so a phrase query finds the rows
-- holding a substring of three or more characters (any case) from the index alone; the list then
-- keeps its LIKE on the row, so the rows found, and the case rules, are exactly LIKE's
-- (kma/services/paging.py, `TextSearch`). The tables hold no copy of the text (external content):
-- the triggers below keep each in step with its table on every write, on either store (rqlite
-- runs them on every node).
--
-- Keys are indexed by their ID only, written when the pool makes the key, never on the Create
-- path: a key's volser is found through data_units_text, and its key group among the few groups.

CREATE VIRTUAL TABLE keys_text USING fts5(id, content='keys', tokenize='trigram');
CREATE TRIGGER keys_text_insert AFTER INSERT ON keys BEGIN
    INSERT INTO keys_text (rowid, id) VALUES (NEW.rowid, NEW.id);
END;
CREATE TRIGGER keys_text_delete AFTER DELETE ON keys BEGIN
    INSERT INTO keys_text (keys_text, rowid, id) VALUES ('delete', OLD.rowid, OLD.id);
END;
CREATE TRIGGER keys_text_update AFTER UPDATE OF id ON keys BEGIN
    INSERT INTO keys_text (keys_text, rowid, id) VALUES ('delete', OLD.rowid, OLD.id);
    INSERT INTO keys_text (rowid, id) VALUES (NEW.rowid, NEW.id);
END;
INSERT INTO keys_text (keys_text) VALUES ('rebuild');

CREATE VIRTUAL TABLE data_units_text USING fts5(id, description, content='data_units', tokenize='trigram');
CREATE TRIGGER data_units_text_insert AFTER INSERT ON data_units BEGIN
    INSERT INTO data_units_text (rowid, id, description) VALUES (NEW.rowid, NEW.id, NEW.description);
END;
CREATE TRIGGER data_units_text_delete AFTER DELETE ON data_units BEGIN
    INSERT INTO data_units_text (data_units_text, rowid, id, description)
        VALUES ('delete', OLD.rowid, OLD.id, OLD.description);
END;
CREATE TRIGGER data_units_text_update AFTER UPDATE OF id, description ON data_units BEGIN
    INSERT INTO data_units_text (data_units_text, rowid, id, description)
        VALUES ('delete', OLD.rowid, OLD.id, OLD.description);
    INSERT INTO data_units_text (rowid, id, description) VALUES (NEW.rowid, NEW.id, NEW.description);
END;
INSERT INTO data_units_text (data_units_text) VALUES ('rebuild');

CREATE VIRTUAL TABLE agents_text USING fts5(id, description, site_id, content='agents', tokenize='trigram');
CREATE TRIGGER agents_text_insert AFTER INSERT ON agents BEGIN
    INSERT INTO agents_text (rowid, id, description, site_id)
        VALUES (NEW.rowid, NEW.id, NEW.description, NEW.site_id);
END;
CREATE TRIGGER agents_text_delete AFTER DELETE ON agents BEGIN
    INSERT INTO agents_text (agents_text, rowid, id, description, site_id)
        VALUES ('delete', OLD.rowid, OLD.id, OLD.description, OLD.site_id);
END;
CREATE TRIGGER agents_text_update AFTER UPDATE OF id, description, site_id ON agents BEGIN
    INSERT INTO agents_text (agents_text, rowid, id, description, site_id)
        VALUES ('delete', OLD.rowid, OLD.id, OLD.description, OLD.site_id);
    INSERT INTO agents_text (rowid, id, description, site_id)
        VALUES (NEW.rowid, NEW.id, NEW.description, NEW.site_id);
END;
INSERT INTO agents_text (agents_text) VALUES ('rebuild');

CREATE VIRTUAL TABLE users_text USING fts5(id, name, content='users', tokenize='trigram');
CREATE TRIGGER users_text_insert AFTER INSERT ON users BEGIN
    INSERT INTO users_text (rowid, id, name) VALUES (NEW.rowid, NEW.id, NEW.name);
END;
CREATE TRIGGER users_text_delete AFTER DELETE ON users BEGIN
    INSERT INTO users_text (users_text, rowid, id, name) VALUES ('delete', OLD.rowid, OLD.id, OLD.name);
END;
CREATE TRIGGER users_text_update AFTER UPDATE OF id, name ON users BEGIN
    INSERT INTO users_text (users_text, rowid, id, name) VALUES ('delete', OLD.rowid, OLD.id, OLD.name);
    INSERT INTO users_text (rowid, id, name) VALUES (NEW.rowid, NEW.id, NEW.name);
END;
INSERT INTO users_text (users_text) VALUES ('rebuild');

CREATE VIRTUAL TABLE pending_quorum_ops_text USING fts5(
    id, summary, type, requested_by, content='pending_quorum_ops', tokenize='trigram'
);
CREATE TRIGGER pending_quorum_ops_text_insert AFTER INSERT ON pending_quorum_ops BEGIN
    INSERT INTO pending_quorum_ops_text (rowid, id, summary, type, requested_by)
        VALUES (NEW.rowid, NEW.id, NEW.summary, NEW.type, NEW.requested_by);
END;
CREATE TRIGGER pending_quorum_ops_text_delete AFTER DELETE ON pending_quorum_ops BEGIN
    INSERT INTO pending_quorum_ops_text (pending_quorum_ops_text, rowid, id, summary, type, requested_by)
        VALUES ('delete', OLD.rowid, OLD.id, OLD.summary, OLD.type, OLD.requested_by);
END;
CREATE TRIGGER pending_quorum_ops_text_update AFTER UPDATE OF id, summary, type, requested_by
    ON pending_quorum_ops BEGIN
    INSERT INTO pending_quorum_ops_text (pending_quorum_ops_text, rowid, id, summary, type, requested_by)
        VALUES ('delete', OLD.rowid, OLD.id, OLD.summary, OLD.type, OLD.requested_by);
    INSERT INTO pending_quorum_ops_text (rowid, id, summary, type, requested_by)
        VALUES (NEW.rowid, NEW.id, NEW.summary, NEW.type, NEW.requested_by);
END;
INSERT INTO pending_quorum_ops_text (pending_quorum_ops_text) VALUES ('rebuild');
