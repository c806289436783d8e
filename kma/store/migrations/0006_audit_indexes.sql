-- Fewer secondary indexes on audit_events: every one is written with every event, on the store's
-- single writer. Kept: operation, event_class, entity_id, kma_id, site_id (filters and the
-- browser's pick lists, a skip-scan each), subject (histories), created_at+severity (date range,
-- sort by time, events per day). Checked with EXPLAIN QUERY PLAN on bench/audit.py's million
-- events, with and without ANALYZE statistics (a KMA never runs ANALYZE).

-- created_at alone is the prefix of audit_created_severity, which serves every query it did.
DROP INDEX audit_created;

-- Severity is a function of the condition (AuditRecord.severity: success -> info, warning ->
-- warning, error -> error), both hashed into the event. One index on both serves both filters:
-- each filter names both columns (kma/services/audit_log.py), so a page is still read in id
-- order straight off the index and a count from the index alone.
DROP INDEX audit_severity;
DROP INDEX audit_condition;
CREATE INDEX audit_severity_condition ON audit_events(severity, condition);

-- Retention class: only the browser's retention filter used it (pruning walks kma_id and
-- chain_seq). Its first page needs no index (a third of all events are in each class); its total
-- is now a scan of the table (~150 ms on a million events).
DROP INDEX audit_retention_age;
