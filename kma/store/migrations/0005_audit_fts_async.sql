-- The audit write path made cheap: free-text indexing moves off it, and the secondary indexes
-- on audit_events shrink to those the browser, the histories and the dashboard use.

-- 1. Free text is indexed in the background (kma/store/fts.py): audit_fts holds exactly the
-- events with id <= indexed_to (the mark); the store's writer indexes the events above it in
-- batches, in transactions of their own, and searches match the tail above the mark directly.
DROP TRIGGER audit_events_fts_insert;

CREATE TABLE audit_fts_state (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_to  INTEGER NOT NULL
);
-- Until now the insert trigger indexed every event.
INSERT INTO audit_fts_state (id, indexed_to) SELECT 1, coalesce(max(id), 0) FROM audit_events;

-- Pruning removes from the index only what is in it (an external-content FTS5 'delete' of a row
-- it never indexed would corrupt it). And since audit_events.id is a plain rowid, once the newest
-- events are pruned the next event re-uses the id after the newest one left: the mark comes down
-- to that event, so a re-used id is never taken for indexed (no event lies between the two
-- marks). One trigger, so that the 'delete' sees the mark before it comes down.
DROP TRIGGER audit_events_fts_delete;
CREATE TRIGGER audit_events_fts_delete AFTER DELETE ON audit_events
BEGIN
    INSERT INTO audit_fts (audit_fts, rowid, message, operation, entity_id, subject_id)
    SELECT 'delete', OLD.id, OLD.message, OLD.operation, OLD.entity_id, OLD.subject_id
    WHERE OLD.id <= (SELECT indexed_to FROM audit_fts_state WHERE id = 1);
    UPDATE audit_fts_state SET indexed_to = (SELECT coalesce(max(id), 0) FROM audit_events)
    WHERE id = 1 AND indexed_to > (SELECT coalesce(max(id), 0) FROM audit_events);
END;
