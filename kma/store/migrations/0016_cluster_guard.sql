-- rqlite has no "this statement must touch N rows": a batch's `expect` becomes, right after its
-- statement and inside the same transaction, an INSERT here of whether changes() matched. The
-- CHECK fails otherwise (even under OR REPLACE), which rolls the whole request back.
CREATE TABLE cluster_guard (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    ok  INTEGER NOT NULL CHECK (ok = 1)
);

-- Each KMA's last write through the cluster, so it can wait until its own replica shows it
-- (read-your-writes on a follower).
CREATE TABLE cluster_write_marks (
    kma_id  TEXT PRIMARY KEY,
    seq     INTEGER NOT NULL
);
