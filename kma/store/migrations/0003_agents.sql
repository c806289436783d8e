-- Encryption agents on the service listener: enrollment certificates, what KMIP adds to a key,
-- and which keys writing from beginning of tape took away from a data unit.

-- The certificate an agent enrolled with last (SHA-256 of its DER, hex): an older certificate
-- of the same agent stops working when it re-enrolls. And when its one-time enrollment
-- passphrase was set, so that an unused passphrase expires (kma/services/enrollment.py).
ALTER TABLE agents ADD COLUMN certificate_fingerprint TEXT;
ALTER TABLE agents ADD COLUMN certificate_not_after INTEGER;
ALTER TABLE agents ADD COLUMN enrollment_passphrase_set_at INTEGER;

-- Whatever sets a passphrase (the Operator's route) also starts its lifetime, on the KMA clock
-- the same statement used for updated_at.
CREATE TRIGGER agents_enrollment_passphrase_set
AFTER UPDATE OF enrollment_passphrase_hash ON agents
WHEN NEW.enrollment_passphrase_hash IS NOT NULL
BEGIN
    UPDATE agents SET enrollment_passphrase_set_at = NEW.updated_at WHERE id = NEW.id;
END;

-- A key an agent made or registered sits in its key group before it is activated (KMIP
-- Pre-Active): keys.key_group_id is set, keys.activated_at is not. Pool keys have neither.
-- KMIP attributes beyond the keys table, only where a key has them.
CREATE TABLE key_kmip (
    key_id              TEXT PRIMARY KEY REFERENCES keys(id),
    usage_mask          INTEGER,        -- Cryptographic Usage Mask, when not Encrypt|Decrypt
    revocation_reason   INTEGER,        -- KMIP Revocation Reason Code
    revocation_message  TEXT
);

-- Client-defined attributes (names starting "x-"), each possibly with several values.
CREATE TABLE key_custom_attributes (
    key_id  TEXT NOT NULL REFERENCES keys(id),
    name    TEXT NOT NULL,
    idx     INTEGER NOT NULL CHECK (idx >= 0),
    value   TEXT NOT NULL,
    PRIMARY KEY (key_id, name, idx)
);

-- Writing from beginning of tape disassociates a data unit's keys (keys.data_unit_id becomes
-- NULL); the association is kept here for the data unit's history.
CREATE TABLE data_unit_released_keys (
    id            INTEGER PRIMARY KEY,
    key_id        TEXT NOT NULL REFERENCES keys(id),
    data_unit_id  TEXT NOT NULL REFERENCES data_units(id),
    agent_id      TEXT NOT NULL,
    released_at   INTEGER NOT NULL
);
CREATE INDEX data_unit_released_keys_unit ON data_unit_released_keys(data_unit_id);
