-- Audit events a cluster KMA committed locally (its outbox) and shipped later: per KMA, the last
-- outbox entry the cluster holds. It goes in the same request as the entries, so after a lost
-- answer the KMA knows exactly which entries are in and ships each one once.
CREATE TABLE cluster_outbox_marks (
    kma_id   TEXT PRIMARY KEY,
    shipped  INTEGER NOT NULL
);
