-- One key, one tape, even after a restore or a refused binding (issue 25; docs/cluster.md).
-- A restore withholds every pool key its backup holds as unassigned: the KMA that made the backup
-- may have issued it after the backup was taken, so it is never issued again
-- (kma/backup/restore.py, kma/services/keypool.py); a drive that wrote with it still reads it by ID.
ALTER TABLE keys ADD COLUMN withheld_at INTEGER;
CREATE INDEX keys_withheld ON keys (withheld_at) WHERE withheld_at IS NOT NULL;
-- A pool key's assignment the cluster refused (the key was no longer unassigned there): the drive
-- wrote a tape with it all the same. Kept for an officer to resolve; the agent still reads the key.
CREATE TABLE unrecorded_bindings (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    key_id       TEXT NOT NULL REFERENCES keys (id),
    data_unit_id TEXT,
    agent_id     TEXT NOT NULL,
    key_group_id TEXT NOT NULL,
    kma_id       TEXT NOT NULL,
    recorded_at  INTEGER NOT NULL,
    reason       TEXT NOT NULL
);
CREATE INDEX unrecorded_bindings_key ON unrecorded_bindings (key_id, agent_id);
