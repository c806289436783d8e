-- Free text in the audit trail with a common word (issue 47): every word typed is matched as a
-- prefix ("key" finds key and keys), and FTS5 answers a prefix query by merging the whole doclist of
-- every word that begins so before it hands over the first row: a word in half the events took
-- 477 ms at ten million events, however few rows the page wants. With prefix indexes of 1 to 8
-- characters, a typed word of that length is one doclist, read lazily, newest first, and the page
-- and the count (up to COUNT_LIMIT) stop as soon (3 ms for "key" at a million events, as at ten).
-- The index is about twice the size. A longer word is merged as before: few words that long are in
-- most events. The events the index held (up to the mark) are indexed again here, in the upgrade.
DROP TABLE audit_fts;
CREATE VIRTUAL TABLE audit_fts USING fts5(
    message, operation, entity_id, subject_id,
    content = 'audit_events', content_rowid = 'id',
    prefix = '1 2 3 4 5 6 7 8'
);
INSERT INTO audit_fts (rowid, message, operation, entity_id, subject_id)
    SELECT id, message, operation, entity_id, subject_id FROM audit_events
    WHERE id <= (SELECT indexed_to FROM audit_fts_state WHERE id = 1);
