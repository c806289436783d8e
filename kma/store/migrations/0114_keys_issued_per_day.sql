-- Keys issued per day (UTC) and KMA, for the dashboard's backup readiness (the issue rate over the
-- last hour, day and week) and its chart of keys issued: a few rows per day instead of the keys
-- themselves, which the dashboard counted one by one from the activation index, reading each key's
-- row for its KMA: 0.8 s of CPU per dashboard at a million keys issued in a week (issue 41's run).
-- Counted by triggers in the very transaction that activates, inserts or deletes a key, as the audit
-- trail's per-day counts are (migration 0108), so the count cannot drift from the keys; filled once
-- from the keys here.
CREATE TABLE keys_issued_per_day (
    day     INTEGER NOT NULL,  -- days since the epoch (UTC) of activated_at
    kma_id  TEXT NOT NULL,     -- the KMA whose pool made the key
    keys    INTEGER NOT NULL,
    PRIMARY KEY (day, kma_id)
) WITHOUT ROWID;
INSERT INTO keys_issued_per_day (day, kma_id, keys)
    SELECT activated_at / 86400, kma_id, count(*) FROM keys WHERE activated_at IS NOT NULL
    GROUP BY activated_at / 86400, kma_id;
CREATE TRIGGER keys_counted_per_day AFTER INSERT ON keys WHEN NEW.activated_at IS NOT NULL
BEGIN
    INSERT INTO keys_issued_per_day (day, kma_id, keys) VALUES (NEW.activated_at / 86400, NEW.kma_id, 1)
        ON CONFLICT (day, kma_id) DO UPDATE SET keys = keys + 1;
END;
CREATE TRIGGER keys_uncounted_per_day AFTER DELETE ON keys WHEN OLD.activated_at IS NOT NULL
BEGIN
    UPDATE keys_issued_per_day SET keys = keys - 1
        WHERE day = OLD.activated_at / 86400 AND kma_id = OLD.kma_id;
END;
CREATE TRIGGER keys_recounted_per_day AFTER UPDATE OF activated_at, kma_id ON keys
    WHEN OLD.activated_at IS NOT NEW.activated_at OR OLD.kma_id IS NOT NEW.kma_id
BEGIN
    UPDATE keys_issued_per_day SET keys = keys - 1
        WHERE OLD.activated_at IS NOT NULL AND day = OLD.activated_at / 86400 AND kma_id = OLD.kma_id;
    INSERT INTO keys_issued_per_day (day, kma_id, keys)
        SELECT NEW.activated_at / 86400, NEW.kma_id, 1 WHERE NEW.activated_at IS NOT NULL
        ON CONFLICT (day, kma_id) DO UPDATE SET keys = keys + 1;
END;
