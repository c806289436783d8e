-- Alert channels (issue 43, docs/alerts.md): where a KMA sends its dashboard's warnings as they
-- start and end, and the audit events of the classes a Security Officer chose.

-- A channel: SNMPv3 notifications, a webhook or e-mail. `settings` says where and how (JSON, no
-- secret); `secrets_wrapped` holds its secrets (JSON) under the master key, context
-- "alert-channel:<id>", and is never answered by the API.
CREATE TABLE alert_channels (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL UNIQUE,
    kind             TEXT NOT NULL CHECK (kind IN ('snmp', 'webhook', 'email')),
    enabled          INTEGER NOT NULL DEFAULT 1,
    settings         TEXT NOT NULL,
    secrets_wrapped  BLOB NOT NULL,
    warnings         INTEGER NOT NULL DEFAULT 1,   -- carries the dashboard's warnings
    audit_classes    TEXT NOT NULL DEFAULT '[]',   -- JSON: the audit event classes it carries
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);

-- What each KMA still has to deliver on each channel, oldest first. Bounded per KMA and channel
-- (kma/services/alerts.py QUEUE_LIMIT): when full, the oldest alert makes way and is counted.
CREATE TABLE alert_queue (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    kma_id      TEXT NOT NULL,
    channel_id  TEXT NOT NULL,
    alert       TEXT NOT NULL,               -- JSON (kma/alerts/message.py Alert)
    created_at  INTEGER NOT NULL
);
CREATE INDEX alert_queue_by_channel ON alert_queue (kma_id, channel_id, seq);

-- The warnings each KMA has announced as started and not yet as ended, by identity: after a
-- restart it announces only what changed meanwhile.
CREATE TABLE alert_warnings (
    kma_id    TEXT NOT NULL,
    identity  TEXT NOT NULL,
    text      TEXT NOT NULL,
    since     INTEGER NOT NULL,
    PRIMARY KEY (kma_id, identity)
);

-- How far each KMA has read its own audit chain for alerts (the last chain_seq queued).
CREATE TABLE alert_audit_positions (
    kma_id      TEXT PRIMARY KEY,
    chain_seq   INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
