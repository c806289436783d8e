-- Master key rotation (issue 38, docs/backups.md#master-key-rotation). The cluster's master key has a
-- generation; a rotation makes the next one and re-wraps every blob in the background. Each blob names
-- its generation itself (kma/crypto/generations.py), so readers use the right key meanwhile.
ALTER TABLE cluster ADD COLUMN master_generation INTEGER NOT NULL DEFAULT 1;
-- The generation this KMA holds: its autonomous unlock blob is of it (when it has one). The old
-- generation is destroyed only once every KMA holds the new one.
ALTER TABLE kmas ADD COLUMN master_generation INTEGER NOT NULL DEFAULT 1;

-- An older generation still needed while its rotation runs: its key under the next generation's
-- (what a KMA unlocked by the quorum, which opens only the newest, reads older blobs with), and the
-- next generation's key under it (how a KMA unlocked before the rotation takes the new one up).
-- Deleted, both blobs with it, when the rotation ends: nothing of the old generation is left.
CREATE TABLE master_key_generations (
    generation    INTEGER PRIMARY KEY,
    key_wrapped   BLOB NOT NULL,
    next_wrapped  BLOB NOT NULL,
    created_at    INTEGER NOT NULL
);

-- One row per rotation: who asked, how far the re-wrap is, when it ended.
CREATE TABLE master_key_rotations (
    to_generation  INTEGER PRIMARY KEY,
    op_id          TEXT NOT NULL,
    started_at     INTEGER NOT NULL,
    started_by     TEXT NOT NULL,
    blobs_total    INTEGER NOT NULL,        -- blobs under the old generation when it started
    blobs_done     INTEGER NOT NULL DEFAULT 0,
    worker_kma     TEXT,                    -- the KMA re-wrapping now (one at a time: no work done twice)
    lease_until    INTEGER,                 -- when another KMA may take over (this one stopped, or died)
    finished_at    INTEGER
);
