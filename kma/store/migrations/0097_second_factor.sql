-- A user's second factor (issue 43, docs/directory.md "Two-step sign-in"): a TOTP secret (RFC 6238)
-- wrapped under the master key (context "totp:<user_id>"), whether its enrolment was confirmed with
-- a first code, the last time step accepted (a code is never accepted twice), and the SHA-256 of
-- each recovery code not used yet (JSON list). Its MAC (kma/services/row_macs.py SECOND_FACTORS)
-- refuses a row altered without the KMA, e.g. a forged secret or recovery code.
CREATE TABLE second_factors (
    user_id          TEXT PRIMARY KEY REFERENCES users(id),
    secret_wrapped   BLOB NOT NULL,
    confirmed        INTEGER NOT NULL DEFAULT 0,
    last_step        INTEGER NOT NULL DEFAULT 0,
    recovery_hashes  TEXT NOT NULL DEFAULT '[]',
    created_at       INTEGER NOT NULL,
    mac              TEXT
);
