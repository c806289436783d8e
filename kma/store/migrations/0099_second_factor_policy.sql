-- Which roles must sign in with a second factor (issue 43, docs/directory.md "Two-step sign-in
-- required by role"). One row: `roles` as a user's roles are kept (comma-separated), set by a
-- Security Officer under quorum and sealed with a MAC (kma/services/row_macs.py
-- SECOND_FACTOR_POLICY). A cluster made before this version signs in as it did, so its row says no
-- role; the first unlock on this version seals it, trusting it on first use. A new cluster's set-up
-- writes the installer's answer (Security Officers unless told otherwise). A row missing or forged
-- counts as Security Officers: the strict reading, never the lenient one.
CREATE TABLE second_factor_policy (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    roles       TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    mac         TEXT
);
INSERT INTO second_factor_policy (id, roles, updated_at) VALUES (1, '', 0);
