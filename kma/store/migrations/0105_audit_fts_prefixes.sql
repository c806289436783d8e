-- Free text in the audit trail at ten million events (issue 47), the index rebuilt in the upgrade
-- from the events it held (up to the mark).
--
-- A common word: every word typed is matched as a prefix ("key" finds key and keys), and FTS5
-- answers a prefix query by merging the whole doclist of every word that begins so before it hands
-- over the first row: a word in half the events took 477 ms, however few rows the page wants. With
-- prefix indexes of 1 to 8 characters a typed word of that length is one doclist, read lazily,
-- newest first, and the page and the count (up to COUNT_LIMIT) stop as soon (3 ms for "key" at a
-- million events, as at ten). A longer word is merged as before: few words that long are in most
-- events.
--
-- Free text with a filter few of its matches meet ("dallas" and class key): each match was read
-- from audit_events to test the filter, 2.5 s at a million events. The columns the browser filters
-- by are in the index too, so the filter is a term of the same FTS5 query (`event_class : "key"`),
-- whose doclists are intersected by seeking, and only the events that have both are read (where
-- the filter is still tested as written). The words typed are matched in the four text columns
-- only (`{message operation entity_id subject_id} : (...)`, kma/services/audit/audit_log.py).
DROP TABLE audit_fts;
CREATE VIRTUAL TABLE audit_fts USING fts5(
    message, operation, entity_id, subject_id,
    event_class, subject_type, severity, kma_id, site_id, retention,
    content = 'audit_events', content_rowid = 'id',
    prefix = '1 2 3 4 5 6 7 8'
);
INSERT INTO audit_fts (rowid, message, operation, entity_id, subject_id,
                       event_class, subject_type, severity, kma_id, site_id, retention)
    SELECT id, message, operation, entity_id, subject_id,
           event_class, subject_type, severity, kma_id, site_id, retention FROM audit_events
    WHERE id <= (SELECT indexed_to FROM audit_fts_state WHERE id = 1);
-- An external-content index forgets an event by being told every value it indexed.
DROP TRIGGER audit_events_fts_delete;
CREATE TRIGGER audit_events_fts_delete AFTER DELETE ON audit_events
BEGIN
    INSERT INTO audit_fts (audit_fts, rowid, message, operation, entity_id, subject_id,
                           event_class, subject_type, severity, kma_id, site_id, retention)
    SELECT 'delete', OLD.id, OLD.message, OLD.operation, OLD.entity_id, OLD.subject_id,
           OLD.event_class, OLD.subject_type, OLD.severity, OLD.kma_id, OLD.site_id, OLD.retention
    WHERE OLD.id <= (SELECT indexed_to FROM audit_fts_state WHERE id = 1);
    UPDATE audit_fts_state SET indexed_to = (SELECT coalesce(max(id), 0) FROM audit_events)
    WHERE id = 1 AND indexed_to > (SELECT coalesce(max(id), 0) FROM audit_events);
END;
