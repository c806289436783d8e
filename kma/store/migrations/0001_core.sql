-- The core schema: cluster, sites, KMAs, users, policies, groups, agents, data units, keys,
-- and the hash-chained audit trail. Times are whole seconds since the epoch (UTC).

CREATE TABLE cluster (
    id                      INTEGER PRIMARY KEY CHECK (id = 1),
    name                    TEXT NOT NULL,
    created_at              INTEGER NOT NULL,
    master_wrapped_by_root  BLOB NOT NULL,      -- master key under a key derived from the root secret
    ca_cert_pem             TEXT NOT NULL,
    ca_key_wrapped          BLOB NOT NULL,      -- CA private key under the master key
    split_threshold         INTEGER NOT NULL CHECK (split_threshold >= 1),
    split_generation        INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE key_split_members (
    name         TEXT PRIMARY KEY,
    share_sealed TEXT NOT NULL,                 -- Shamir share sealed under the member's passphrase
    generation   INTEGER NOT NULL
);

CREATE TABLE sites (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE kmas (
    id                  TEXT PRIMARY KEY,
    name                TEXT NOT NULL,
    site_id             TEXT NOT NULL REFERENCES sites(id),
    management_address  TEXT NOT NULL,
    service_address     TEXT NOT NULL,
    version             TEXT NOT NULL,
    locked              INTEGER NOT NULL DEFAULT 0,
    key_pool_size       INTEGER NOT NULL CHECK (key_pool_size BETWEEN 0 AND 100000),
    autounlock_master   BLOB,                   -- master key under this KMA's local unlock key file
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
);

CREATE TABLE users (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL,
    roles            TEXT NOT NULL,             -- comma-separated role names
    passphrase_hash  TEXT NOT NULL,
    enabled          INTEGER NOT NULL DEFAULT 1,
    failed_sign_ins  INTEGER NOT NULL DEFAULT 0,
    locked_until     INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);

CREATE TABLE sessions (
    token_hash  TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX sessions_expiry ON sessions(expires_at);

CREATE TABLE key_policies (
    id                 TEXT PRIMARY KEY,
    description        TEXT NOT NULL DEFAULT '',
    encryption_period  INTEGER NOT NULL CHECK (encryption_period > 0),
    cryptoperiod       INTEGER NOT NULL CHECK (cryptoperiod >= encryption_period),
    allow_export       INTEGER NOT NULL DEFAULT 0,
    allow_import       INTEGER NOT NULL DEFAULT 0,
    agents_may_revoke  INTEGER NOT NULL DEFAULT 0,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
);

-- Periods are immutable once set: enforced by the store, not only by the service.
CREATE TRIGGER key_policy_periods_immutable
BEFORE UPDATE OF encryption_period, cryptoperiod ON key_policies
WHEN NEW.encryption_period IS NOT OLD.encryption_period OR NEW.cryptoperiod IS NOT OLD.cryptoperiod
BEGIN
    SELECT RAISE(ABORT, 'key policy periods cannot change once set');
END;

CREATE TABLE key_groups (
    id          TEXT PRIMARY KEY,
    description TEXT NOT NULL DEFAULT '',
    policy_id   TEXT NOT NULL REFERENCES key_policies(id),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE agents (
    id                          TEXT PRIMARY KEY,
    description                 TEXT NOT NULL DEFAULT '',
    site_id                     TEXT NOT NULL REFERENCES sites(id),
    default_key_group_id        TEXT NOT NULL REFERENCES key_groups(id),
    enabled                     INTEGER NOT NULL DEFAULT 1,
    enrollment_passphrase_hash  TEXT,
    enrolled_at                 INTEGER,
    created_at                  INTEGER NOT NULL,
    updated_at                  INTEGER NOT NULL
);

CREATE TABLE key_group_agents (
    key_group_id TEXT NOT NULL REFERENCES key_groups(id),
    agent_id     TEXT NOT NULL REFERENCES agents(id),
    PRIMARY KEY (key_group_id, agent_id)
);
CREATE INDEX key_group_agents_agent ON key_group_agents(agent_id);

CREATE TABLE data_units (
    id          TEXT PRIMARY KEY,                -- external unique ID, e.g. a volser
    description TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE keys (
    id                TEXT PRIMARY KEY,
    kma_id            TEXT NOT NULL,             -- the KMA whose pool generated it
    material_wrapped  BLOB,                      -- AES-GCM under the master key; NULL once destroyed
    key_group_id      TEXT REFERENCES key_groups(id),
    data_unit_id      TEXT REFERENCES data_units(id),
    agent_id          TEXT,
    created_at        INTEGER NOT NULL,
    activated_at      INTEGER,
    protect_until     INTEGER,                   -- end of the encryption period
    deactivate_at     INTEGER,                   -- end of the cryptoperiod (or earlier, if revoked)
    compromised_at    INTEGER,
    destroyed_at      INTEGER,
    destroy_comment   TEXT
);
CREATE INDEX keys_pool ON keys(kma_id) WHERE activated_at IS NULL;
CREATE INDEX keys_data_unit ON keys(data_unit_id);
CREATE INDEX keys_group ON keys(key_group_id);
CREATE INDEX keys_created ON keys(created_at, id);

CREATE TABLE audit_events (
    id              INTEGER PRIMARY KEY,
    kma_id          TEXT NOT NULL,
    chain_seq       INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    site_id         TEXT NOT NULL,
    operation       TEXT NOT NULL,
    severity        TEXT NOT NULL,
    condition       TEXT NOT NULL,
    event_class     TEXT NOT NULL,
    entity_id       TEXT NOT NULL,
    entity_address  TEXT NOT NULL,
    message         TEXT NOT NULL,
    retention       TEXT NOT NULL,
    subject_type    TEXT,
    subject_id      TEXT,
    prev_hash       TEXT NOT NULL,
    hash            TEXT NOT NULL,
    UNIQUE (kma_id, chain_seq)
);
CREATE INDEX audit_subject ON audit_events(subject_type, subject_id);
CREATE INDEX audit_created ON audit_events(created_at);

-- Events are append-only; a change made behind the store's back is caught by the hash chain.
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events cannot be changed'); END;
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events cannot be removed'); END;

-- Each KMA appends to its own chain; the head is kept beside it so truncation shows.
CREATE TABLE audit_heads (
    kma_id     TEXT PRIMARY KEY,
    chain_seq  INTEGER NOT NULL,
    hash       TEXT NOT NULL
);
