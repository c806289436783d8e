-- Signed reports on a schedule (issue 43, docs/reports.md): per KMA, like its database backups,
-- since the folder they are written into is on its machine. `reports`: the names of the reports
-- made at each run (comma-separated); `email_channel_id`: an e-mail alert channel they are also
-- sent on, attached (NULL: the folder only).
CREATE TABLE report_schedules (
    kma_id            TEXT PRIMARY KEY,
    frequency         TEXT NOT NULL DEFAULT 'off' CHECK (frequency IN ('off', 'daily', 'weekly', 'monthly')),
    folder            TEXT NOT NULL DEFAULT '',
    reports           TEXT NOT NULL DEFAULT '',
    email_channel_id  TEXT,
    updated_at        INTEGER,
    updated_by        TEXT,
    last_attempt_at   INTEGER,
    last_error        TEXT
);
