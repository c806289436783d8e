-- A key split change names its new members; each then sets their own passphrase (enrolment),
-- so whoever submits the change never chooses, or learns, another member's passphrase. Between
-- submission and enrolment the member's new share is held under the master key; at enrolment it
-- is sealed under the passphrase the member typed. See kma/services/member_enrolment.py.
CREATE TABLE key_split_enrolments (
    op_id          TEXT NOT NULL REFERENCES pending_quorum_ops(id),
    member_name    TEXT NOT NULL,
    position       INTEGER NOT NULL,        -- the order the change named its members in
    code_hash      TEXT,                    -- SHA-256 of the one-time enrolment code; NULL once used
    share_wrapped  BLOB,                    -- the new share under the master key, until enrolment
    share_sealed   TEXT,                    -- then sealed under the member's own passphrase
    enrolled_at    INTEGER,
    enrolled_from  TEXT,                    -- the network address the member enrolled from
    PRIMARY KEY (op_id, member_name)
);

-- An operation that ends leaves no share behind, enrolled or not (as pending_quorum_ops_wipe).
CREATE TRIGGER key_split_enrolments_wipe AFTER UPDATE OF state ON pending_quorum_ops
WHEN NEW.state <> 'pending'
BEGIN
    UPDATE key_split_enrolments SET code_hash = NULL, share_wrapped = NULL, share_sealed = NULL
    WHERE op_id = NEW.id;
END;
