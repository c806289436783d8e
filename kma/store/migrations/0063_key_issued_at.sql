-- KMIP Initial Date (issue 42): when a key became an agent's object (Create, Write Key, Register),
-- apart from when its material was made (`created_at`: a pool key is made ahead, KMIP's Original
-- Creation Date). Keys issued before this migration keep their pool time, all this KMA knows.
ALTER TABLE keys ADD COLUMN issued_at INTEGER;
UPDATE keys SET issued_at = created_at WHERE key_group_id IS NOT NULL;
