-- Transfer partners (issue 40, docs/transfer.md): this cluster's transfer identity, the partner
-- clusters a quorum registered, and every transfer file sent or taken in.
--
-- The identity's private half (Ed25519 || X25519) is stored only under the master key, so a
-- locked KMA signs and opens no transfer file.
CREATE TABLE transfer_identity (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    public_identity  BLOB NOT NULL,             -- Ed25519 public (32) || X25519 public (32)
    private_wrapped  BLOB NOT NULL,
    created_at       INTEGER NOT NULL
);

CREATE TABLE transfer_partners (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL,
    contact          TEXT NOT NULL DEFAULT '',
    public_identity  BLOB NOT NULL UNIQUE,
    fingerprint      TEXT NOT NULL,
    may_send         INTEGER NOT NULL,          -- its files are imported here
    may_receive      INTEGER NOT NULL,          -- keys are exported to it
    enabled          INTEGER NOT NULL DEFAULT 1,
    registered_by_op TEXT NOT NULL,             -- the quorum operation that registered it
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    mac              TEXT                       -- row MAC (kma/services/row_macs.py): whom keys go to
);

-- One row per file, sent or imported: an imported file's ID is taken once, which is what makes a
-- second import of the same file change nothing.
CREATE TABLE transfer_files (
    id           TEXT PRIMARY KEY,
    partner_id   TEXT NOT NULL,
    direction    TEXT NOT NULL CHECK (direction IN ('export', 'import')),
    data_units   INTEGER NOT NULL,
    keys         INTEGER NOT NULL,
    done_by      TEXT NOT NULL,
    done_at      INTEGER NOT NULL
);

-- Where a data unit's keys came from and went to (its history shows them).
CREATE TABLE data_unit_transfers (
    data_unit_id  TEXT NOT NULL,
    file_id       TEXT NOT NULL REFERENCES transfer_files (id),
    PRIMARY KEY (data_unit_id, file_id)
);
CREATE INDEX data_unit_transfers_file ON data_unit_transfers (file_id);
