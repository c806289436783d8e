-- The write keys each KMA refused by the media rules, by reason, since that KMA's start (issue 41,
-- docs/media.md): each cluster KMA publishes its own counts (kma/services/media_refusals.py), so any
-- KMA shows the whole cluster's, not only the refusals of the KMA a manager is signed in to.
CREATE TABLE media_refusal_counts (
    kma_id      TEXT NOT NULL,
    reason      TEXT NOT NULL,
    count       INTEGER NOT NULL,
    since       INTEGER NOT NULL,   -- the start of the KMA: the counts are since then
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (kma_id, reason)
);
