-- Audit events per day (UTC) and severity, for the dashboard's chart (kma/services/series.py): a
-- few rows per day instead of the events themselves, which the 30-day series counted one by one
-- from the (created_at, severity) index: 523 ms at ten million events over three years (issue 47),
-- where a busy month is hundreds of thousands of events. Counted by a trigger in the very
-- transaction that writes each event, as agent_keys_served is (migration 0015), so the count cannot
-- drift from the trail; counted down by pruning's deletes, so a long series shows what is kept;
-- filled once from the trail here.
CREATE TABLE audit_events_per_day (
    day       INTEGER NOT NULL,  -- days since the epoch (UTC)
    severity  TEXT NOT NULL,
    events    INTEGER NOT NULL,
    PRIMARY KEY (day, severity)
) WITHOUT ROWID;
INSERT INTO audit_events_per_day (day, severity, events)
    SELECT created_at / 86400, severity, count(*) FROM audit_events GROUP BY created_at / 86400, severity;
CREATE TRIGGER audit_events_counted_per_day AFTER INSERT ON audit_events
BEGIN
    INSERT INTO audit_events_per_day (day, severity, events) VALUES (NEW.created_at / 86400, NEW.severity, 1)
        ON CONFLICT (day, severity) DO UPDATE SET events = events + 1;
END;
CREATE TRIGGER audit_events_uncounted_per_day AFTER DELETE ON audit_events
BEGIN
    UPDATE audit_events_per_day SET events = events - 1
        WHERE day = OLD.created_at / 86400 AND severity = OLD.severity;
END;
