-- Each KMA's replication lag as its shipper last reported it, with each shipment: the outbox
-- entries still waiting on that KMA and the age of the oldest, and when it said so. Any KMA's
-- topology shows every KMA's lag from here (a KMA cut off from the majority reports nothing new:
-- `reported_at` says how old its figures are).
ALTER TABLE cluster_outbox_marks ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cluster_outbox_marks ADD COLUMN oldest_age_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cluster_outbox_marks ADD COLUMN reported_at INTEGER;
