-- A witness (issue 11): an rqlite voter with no key service (no KMIP, no agents, no key pool),
-- admitted like a KMA (a quorum-approved entry, a one-time passphrase, the same join). Two sites
-- with two KMAs each need a fifth voter at a third place to survive the loss of a whole site.
-- See kma/services/kma_entries.py and kma/cluster/witness.py.
ALTER TABLE kmas ADD COLUMN witness INTEGER NOT NULL DEFAULT 0 CHECK (witness IN (0, 1));
