-- Transfer files uploaded as their own streamed request (issue 40, docs/transfer.md "Uploads"): an
-- import's file came inside the JSON of its request, which the KMA held whole while it received it
-- (+153 MiB of memory for a 100,000-unit file, +194 MiB for its preview). Now the file goes up first,
-- as the body of POST /transfer-uploads, written here a part at a time as it arrives and hashed as it
-- goes; the preview, the import, the import job and a quorum submission name the upload.
--
-- In the store, replicated as any row, because the import job that reads it may run on another KMA
-- of the cluster. `owner`: the entity that uploaded it (nobody else's request may use it);
-- `sha256` and `size`: set when the whole file has arrived (NULL while it arrives: not usable);
-- `expires_at`: an upload not used by then is refused and removed; one that an import or a quorum
-- submission took over is removed then (its bytes go on with the job or the pending operation).
CREATE TABLE transfer_uploads (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    kma_id      TEXT NOT NULL,
    size        INTEGER NOT NULL DEFAULT 0,
    sha256      TEXT,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);

CREATE INDEX transfer_uploads_expiry ON transfer_uploads (expires_at);

-- An upload's bytes, in parts of 256 KiB (each its own transaction: a drive's commit waits behind
-- one at most), as transfer_job_files.
CREATE TABLE transfer_upload_parts (
    upload_id  TEXT NOT NULL,
    part       INTEGER NOT NULL,
    content    BLOB NOT NULL,
    PRIMARY KEY (upload_id, part)
);

CREATE TRIGGER transfer_upload_parts_end AFTER DELETE ON transfer_uploads
BEGIN
    DELETE FROM transfer_upload_parts WHERE upload_id = OLD.id;
END;
