-- Row MACs (issue 26, part 4): the rows that grant power carry an HMAC-SHA256 under a key only an
-- unlocked KMA holds (kma/services/row_macs.py), so a row written straight into a replica grants
-- nothing. NULL on rows of a store made before this version until the first unlock seals them.
ALTER TABLE users ADD COLUMN mac TEXT;
ALTER TABLE key_group_agents ADD COLUMN mac TEXT;
ALTER TABLE key_split_members ADD COLUMN mac TEXT;
-- The dashboard and `kma status` count tamper events; a partial index keeps that one small read.
CREATE INDEX audit_tamper ON audit_events(created_at) WHERE operation = 'security.tamper';
-- A session acts as its user: a session row written into the store must not (sessions made on a
-- locked KMA get theirs when it unlocks; one without a MAC on an unlocked KMA is refused).
ALTER TABLE sessions ADD COLUMN mac TEXT;
