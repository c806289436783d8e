-- Transfer jobs in the store (issue 40, docs/transfer.md "Progress: transfer jobs"): a job's
-- progress and answer were one KMA's memory, gone with a restart and unseen from the cluster's other
-- KMAs. Now each job is a row, replicated as any other: a manager polling through another KMA sees
-- it, and a job whose KMA stopped is shown interrupted with what it did (`done` is written in the
-- same transaction as each import batch, so it is exactly what is in the store).
--
-- `kma_id`: the KMA that runs it; `updated_at`: that KMA's last word on it (at least every few
-- seconds while it runs). A row 'running' whose KMA restarted, or that no KMA touched for a while,
-- is interrupted; an import job is resumed from it (POST /transfer-jobs/{id}/resume).
-- `result`: the answer's JSON (an export's file is in transfer_job_files, not here);
-- `file_sha256`: the held file's, so a resume reads back only a file held whole.
CREATE TABLE transfer_jobs (
    id             TEXT PRIMARY KEY,
    kind           TEXT NOT NULL CHECK (kind IN ('export', 'import')),
    started_by     TEXT NOT NULL,
    kma_id         TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed')),
    phase          TEXT NOT NULL,
    done           INTEGER NOT NULL DEFAULT 0,
    total          INTEGER NOT NULL DEFAULT 0,
    key_group_id   TEXT,
    started_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    finished_at    INTEGER,
    error_status   INTEGER,
    error_code     TEXT,
    error_message  TEXT,
    result         TEXT,
    file_sha256    TEXT
);

-- A job's file, in parts (of 256 KiB, each its own transaction): an import's (the partner's ciphertext, which only this
-- cluster opens: it is what a resumed import reads again, on any KMA) until the import ends, and an
-- export's (wrapped to its partner) until its answer is no longer kept.
CREATE TABLE transfer_job_files (
    job_id   TEXT NOT NULL,
    part     INTEGER NOT NULL,
    content  BLOB NOT NULL,
    PRIMARY KEY (job_id, part)
);

CREATE TRIGGER transfer_job_files_end AFTER DELETE ON transfer_jobs
BEGIN
    DELETE FROM transfer_job_files WHERE job_id = OLD.id;
END;
