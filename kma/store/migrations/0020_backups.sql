-- Backups (issue 12). The files live in the KMA's folder (DIR/backups); these rows say what each
-- holds, so that key readiness and key destruction can be judged without opening a file.
CREATE TABLE backups (
    id              TEXT PRIMARY KEY,
    kma_id          TEXT NOT NULL,              -- the KMA that made it and keeps its file
    created_at      INTEGER NOT NULL,           -- when its snapshot began: it holds every key marked by then
    created_by      TEXT NOT NULL,              -- a user ID, or the KMA for a scheduled backup
    scheduled       INTEGER NOT NULL DEFAULT 0,
    file_name       TEXT NOT NULL,
    size            INTEGER NOT NULL,
    sha256          TEXT NOT NULL,              -- of the whole file, as downloaded
    schema_version  INTEGER NOT NULL,
    keys            INTEGER NOT NULL,
    audit_events    INTEGER NOT NULL,
    deleted_at      INTEGER,                    -- deleted by a Backup Operator, or expired by the schedule
    deleted_by      TEXT
);
CREATE INDEX backups_live ON backups(created_at) WHERE deleted_at IS NULL;

CREATE TABLE core_security_backups (
    id                TEXT PRIMARY KEY,
    created_at        INTEGER NOT NULL,
    created_by        TEXT NOT NULL,
    split_generation  INTEGER NOT NULL          -- out of date once the key split's generation moves on
);

-- When the first database backup to hold this key began (a backup marks every unmarked key, then
-- copies the store). Any backup that began at or after this time holds the key too.
ALTER TABLE keys ADD COLUMN backup_mark INTEGER;
CREATE INDEX keys_unmarked ON keys(kma_id) WHERE backup_mark IS NULL AND material_wrapped IS NOT NULL;
