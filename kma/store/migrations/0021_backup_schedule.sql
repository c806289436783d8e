-- Scheduled database backups (issue 12): each KMA's own schedule, since the target folder is on
-- that KMA's machine. A failed attempt is an audit event of severity error and waits a period.
CREATE TABLE backup_schedules (
    kma_id           TEXT PRIMARY KEY,
    frequency        TEXT NOT NULL CHECK (frequency IN ('off', 'hourly', 'daily')),
    folder           TEXT NOT NULL DEFAULT '',
    keep             INTEGER NOT NULL CHECK (keep BETWEEN 1 AND 1000),
    updated_at       INTEGER NOT NULL,
    updated_by       TEXT NOT NULL,
    last_attempt_at  INTEGER,
    last_error       TEXT
);
