-- KMAs joining the cluster (issue 11): a Security Officer creates a KMA's entry under quorum; the
-- entry carries a one-time KMA passphrase (only its Argon2id hash) with which the new machine
-- joins (POST /cluster/join), receiving node and server certificates from the cluster CA.
-- See kma/services/kma_entries.py and kma/services/kma_join.py.
ALTER TABLE kmas ADD COLUMN voter INTEGER NOT NULL DEFAULT 1 CHECK (voter IN (0, 1));
ALTER TABLE kmas ADD COLUMN raft_address TEXT NOT NULL DEFAULT '';  -- host:port other KMAs reach
ALTER TABLE kmas ADD COLUMN join_passphrase_hash TEXT;      -- NULL once used (or never set)
ALTER TABLE kmas ADD COLUMN join_passphrase_set_at INTEGER;
-- 1: the entry waits for its machine to join (KMAs made by set-up, or joined, are 0).
ALTER TABLE kmas ADD COLUMN awaiting_join INTEGER NOT NULL DEFAULT 0 CHECK (awaiting_join IN (0, 1));

-- Every certificate the cluster CA issued to a KMA at its join, so the listeners can refuse the
-- certificates of a KMA that was removed or replaced (by serial, whatever the machine presents).
CREATE TABLE kma_certificates (
    serial      TEXT PRIMARY KEY,                 -- hex, as the certificate carries it
    kma_id      TEXT NOT NULL REFERENCES kmas(id),
    purpose     TEXT NOT NULL CHECK (purpose IN ('node', 'server')),
    not_after   INTEGER NOT NULL,
    issued_at   INTEGER NOT NULL,
    revoked_at  INTEGER                           -- set when the KMA is removed or replaced
);
CREATE INDEX kma_certificates_kma ON kma_certificates(kma_id);

-- Wrong KMA passphrases count like wrong sign-ins: the lockouts table learns the kind 'kma'.
CREATE TABLE lockouts_new (
    kind          TEXT NOT NULL CHECK (kind IN ('user', 'key_split_member', 'kma')),
    name          TEXT NOT NULL,
    address       TEXT NOT NULL,
    failures      INTEGER NOT NULL CHECK (failures >= 0),
    locked_until  INTEGER,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (kind, name, address)
);
INSERT INTO lockouts_new SELECT kind, name, address, failures, locked_until, updated_at FROM lockouts;
DROP TABLE lockouts;
ALTER TABLE lockouts_new RENAME TO lockouts;
CREATE INDEX lockouts_updated ON lockouts(updated_at);
