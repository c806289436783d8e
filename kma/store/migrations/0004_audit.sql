-- The auditor's view: free-text search, an index for every filter of the browser, retention
-- classes, signed checkpoints, and pruning that only a deliberate, checkpointed path can do.

-- Free text over message, operation, entity and subject (FTS5, external content: the text
-- lives once, in audit_events). Events are append-only, so an AFTER INSERT trigger keeps the
-- index in step; the AFTER DELETE trigger only ever fires inside a pruning batch.
CREATE VIRTUAL TABLE audit_fts USING fts5(
    message, operation, entity_id, subject_id,
    content = 'audit_events', content_rowid = 'id'
);
INSERT INTO audit_fts (audit_fts) VALUES ('rebuild');

CREATE TRIGGER audit_events_fts_insert AFTER INSERT ON audit_events
BEGIN
    INSERT INTO audit_fts (rowid, message, operation, entity_id, subject_id)
    VALUES (NEW.id, NEW.message, NEW.operation, NEW.entity_id, NEW.subject_id);
END;

CREATE TRIGGER audit_events_fts_delete AFTER DELETE ON audit_events
BEGIN
    INSERT INTO audit_fts (audit_fts, rowid, message, operation, entity_id, subject_id)
    VALUES ('delete', OLD.id, OLD.message, OLD.operation, OLD.entity_id, OLD.subject_id);
END;

-- One index per filter. SQLite orders each index's entries by (column, rowid), so
-- `WHERE column = ? ORDER BY id DESC LIMIT n` walks the index backwards and stops after n rows:
-- the first page of a filtered browser costs the same on a million events as on a hundred.
CREATE INDEX audit_operation ON audit_events(operation);
CREATE INDEX audit_severity ON audit_events(severity);
CREATE INDEX audit_condition ON audit_events(condition);
CREATE INDEX audit_class ON audit_events(event_class);
CREATE INDEX audit_entity ON audit_events(entity_id);
CREATE INDEX audit_kma ON audit_events(kma_id);
CREATE INDEX audit_site ON audit_events(site_id);
CREATE INDEX audit_retention_age ON audit_events(retention, created_at);
CREATE INDEX audit_created_severity ON audit_events(created_at, severity);  -- events per day
CREATE INDEX keys_activated ON keys(activated_at) WHERE activated_at IS NOT NULL;  -- keys per day

-- Retention classes and their periods (seconds): a cluster setting, changed by a Security
-- Officer. Long >= medium >= short is enforced here as well as by the service.
CREATE TABLE audit_retention (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    long    INTEGER NOT NULL CHECK (long >= medium),
    medium  INTEGER NOT NULL CHECK (medium >= short),
    short   INTEGER NOT NULL CHECK (short >= 86400),
    updated_at INTEGER NOT NULL
);
INSERT INTO audit_retention (id, long, medium, short, updated_at)
VALUES (1, 7 * 365 * 86400 + 2 * 86400, 365 * 86400, 90 * 86400, CAST(strftime('%s', 'now') AS INTEGER));

-- The cluster's audit signing keys (Ed25519). The private key is wrapped under the master key;
-- the certificate, issued by the cluster CA, binds the public key to this cluster so that an
-- export can be checked offline against the CA fingerprint users already pin.
CREATE TABLE audit_signing_keys (
    id               INTEGER PRIMARY KEY,
    public_key       BLOB NOT NULL,          -- raw Ed25519 public key, 32 bytes
    certificate_pem  TEXT NOT NULL,
    private_wrapped  BLOB NOT NULL,
    created_by_kma   TEXT NOT NULL,
    created_at       INTEGER NOT NULL
);

-- A signed statement about one KMA's chain: "up to chain_seq, ending in hash, these events
-- (retained_count of them, digest retained_digest) are the whole of it". Verification starts
-- from the latest checkpoint whose signature checks, which is what lets pruning remove events
-- below it without breaking the chain.
CREATE TABLE audit_checkpoints (
    id               INTEGER PRIMARY KEY,
    kma_id           TEXT NOT NULL,
    chain_seq        INTEGER NOT NULL,
    hash             TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    retained_count   INTEGER NOT NULL,
    retained_digest  TEXT NOT NULL,
    signing_key_id   INTEGER NOT NULL REFERENCES audit_signing_keys(id),
    signature        BLOB NOT NULL
);
CREATE INDEX audit_checkpoints_chain ON audit_checkpoints(kma_id, chain_seq);

CREATE TRIGGER audit_signing_keys_no_update BEFORE UPDATE ON audit_signing_keys
BEGIN SELECT RAISE(ABORT, 'audit signing keys cannot be changed'); END;
CREATE TRIGGER audit_signing_keys_no_delete BEFORE DELETE ON audit_signing_keys
BEGIN SELECT RAISE(ABORT, 'audit signing keys cannot be removed'); END;
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
BEGIN SELECT RAISE(ABORT, 'audit checkpoints cannot be changed'); END;
CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints
BEGIN SELECT RAISE(ABORT, 'audit checkpoints cannot be removed'); END;

-- Pruning is the only way an event may leave, and only through a permit that lives inside the
-- pruning batch (inserted first, deleted last, so a committed database never holds one). A
-- permit names a checkpoint and one cut-off time per retention class; the delete-blocking
-- trigger lets through only events covered by both.
CREATE TABLE audit_prune_permits (
    kma_id         TEXT PRIMARY KEY,
    checkpoint_id  INTEGER NOT NULL REFERENCES audit_checkpoints(id),
    cutoff_long    INTEGER NOT NULL,
    cutoff_medium  INTEGER NOT NULL,
    cutoff_short   INTEGER NOT NULL
);

DROP TRIGGER audit_events_no_delete;
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
WHEN NOT EXISTS (
    SELECT 1 FROM audit_prune_permits p JOIN audit_checkpoints c ON c.id = p.checkpoint_id
    WHERE p.kma_id = OLD.kma_id AND c.kma_id = OLD.kma_id AND OLD.chain_seq <= c.chain_seq
      AND OLD.created_at < CASE OLD.retention WHEN 'long' THEN p.cutoff_long
                                              WHEN 'medium' THEN p.cutoff_medium
                                              ELSE p.cutoff_short END
)
BEGIN SELECT RAISE(ABORT, 'audit events cannot be removed'); END;
