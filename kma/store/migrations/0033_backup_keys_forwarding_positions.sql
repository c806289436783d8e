-- Issue 26, items 4 and 5.

-- The key each key split change makes for the database backups taken after it (generation 2 and
-- on; generation 1's is derived from the master key). Wrapped under the master key, so every
-- unlocked KMA of the cluster encrypts its backups under the newest one; a core security backup
-- carries those of its own generation and before, so one taken before a change opens no backup
-- taken after it.
CREATE TABLE backup_keys (
    generation   INTEGER PRIMARY KEY,  -- the key split generation the change made
    key_wrapped  BLOB NOT NULL,        -- under the master key, context "database-backup-key:<generation>"
    created_at   INTEGER NOT NULL
);

-- Audit forwarding keeps a position per KMA *and* collector: switching A -> B -> A resumes A where
-- A was. `chain_seq` is the last event the collector is known to have read (docs/api.md).
CREATE TABLE audit_forwarding_positions_by_collector (
    kma_id       TEXT NOT NULL,
    destination  TEXT NOT NULL,
    chain_seq    INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (kma_id, destination)
);
INSERT INTO audit_forwarding_positions_by_collector (kma_id, destination, chain_seq, updated_at)
    SELECT kma_id, destination, chain_seq, updated_at FROM audit_forwarding_positions;
DROP TABLE audit_forwarding_positions;
ALTER TABLE audit_forwarding_positions_by_collector RENAME TO audit_forwarding_positions;
