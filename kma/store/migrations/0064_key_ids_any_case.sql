-- Object identifiers are unique regardless of case (issue 39): an Import under another spelling of
-- a key's ID is refused, found through this index. Not a unique index: a store where two IDs
-- already differ only in case still starts (each stays reachable by its exact ID).
CREATE INDEX keys_id_any_case ON keys (id COLLATE NOCASE);
