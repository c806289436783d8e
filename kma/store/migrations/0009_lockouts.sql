-- Bounded failures for everything a person proves with a passphrase: signing in (counted per
-- user ID and source address, and per user ID over all addresses) and key split members'
-- credentials (per member). A failure slot is taken in one statement before each passphrase
-- check: see kma/services/lockout.py. User IDs that do not exist are counted like known ones,
-- so a lockout says nothing about which users exist.
CREATE TABLE lockouts (
    kind          TEXT NOT NULL CHECK (kind IN ('user', 'key_split_member')),
    name          TEXT NOT NULL,      -- the user ID as typed (known or not), or the member's name
    address       TEXT NOT NULL,      -- the source address, or '*' for the count over all of them
    failures      INTEGER NOT NULL CHECK (failures >= 0),
    locked_until  INTEGER,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (kind, name, address)
);
CREATE INDEX lockouts_updated ON lockouts(updated_at);

INSERT INTO lockouts (kind, name, address, failures, locked_until, updated_at)
    SELECT 'user', id, '*', failed_sign_ins, locked_until, updated_at FROM users
    WHERE failed_sign_ins > 0 OR locked_until IS NOT NULL;
ALTER TABLE users DROP COLUMN failed_sign_ins;
ALTER TABLE users DROP COLUMN locked_until;
