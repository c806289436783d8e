-- Quorum: pending quorum operations and the approvals of key split members.
-- How approved shares are held is explained in kma/services/quorum_escrow.py.

-- How long a pending quorum operation waits for approvals before it expires (seconds).
ALTER TABLE cluster ADD COLUMN quorum_op_lifetime INTEGER NOT NULL DEFAULT 86400
    CHECK (quorum_op_lifetime BETWEEN 300 AND 2592000);

CREATE TABLE pending_quorum_ops (
    id                TEXT PRIMARY KEY,
    type              TEXT NOT NULL,          -- create_user, unlock_kma, change_key_split, ...
    summary           TEXT NOT NULL,          -- plain sentence: what it will change
    request           TEXT NOT NULL,          -- canonical JSON of the request, as approvers see it
    payload           TEXT NOT NULL,          -- what the executor needs: hashes and sealed material, never a clear secret
    target_kma_id     TEXT,                   -- the KMA it acts on (unlock, autonomous unlock)
    requested_by      TEXT NOT NULL,
    requested_from    TEXT NOT NULL,
    split_generation  INTEGER NOT NULL,       -- approvals count only under this key split
    threshold         INTEGER NOT NULL CHECK (threshold >= 1),
    submitted_at      INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    expires_at        INTEGER NOT NULL,
    state             TEXT NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'executed', 'expired', 'deleted', 'failed')),
    result            TEXT,                   -- plain sentence once it ended
    escrow_holder     TEXT CHECK (escrow_holder IN ('master', 'memory')),
    escrow_wrapped    BLOB                    -- the operation's escrow key under the master key
);
CREATE INDEX pending_quorum_ops_state ON pending_quorum_ops(state, expires_at);
CREATE INDEX pending_quorum_ops_submitted ON pending_quorum_ops(submitted_at, id);
-- One unlock of a KMA at a time: approvals for it are not spread over several operations.
CREATE UNIQUE INDEX pending_quorum_ops_one_unlock ON pending_quorum_ops(target_kma_id)
    WHERE state = 'pending' AND type = 'unlock_kma';

CREATE TABLE quorum_approvals (
    op_id           TEXT NOT NULL REFERENCES pending_quorum_ops(id),
    member_name     TEXT NOT NULL,            -- the key split member; counts once per operation
    approved_by     TEXT NOT NULL,            -- the signed-in user who entered the credential
    approved_at     INTEGER NOT NULL,
    share_escrowed  BLOB,                     -- the member's share under the escrow key; NULL once the op ended
    PRIMARY KEY (op_id, member_name)
);

-- An operation that ends (executed, expired, deleted, failed) loses its escrowed shares and
-- escrow key in the same transaction: enforced here, so no code path can forget it.
CREATE TRIGGER pending_quorum_ops_wipe AFTER UPDATE OF state ON pending_quorum_ops
WHEN NEW.state <> 'pending'
BEGIN
    UPDATE quorum_approvals SET share_escrowed = NULL WHERE op_id = NEW.id;
    UPDATE pending_quorum_ops SET escrow_wrapped = NULL WHERE id = NEW.id;
END;

-- An ended operation never returns to pending, so it can never run later.
CREATE TRIGGER pending_quorum_ops_final BEFORE UPDATE OF state ON pending_quorum_ops
WHEN OLD.state <> 'pending' AND NEW.state IS NOT OLD.state
BEGIN
    SELECT RAISE(ABORT, 'a quorum operation that ended cannot change state');
END;
