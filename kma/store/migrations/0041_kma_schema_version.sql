-- The newest schema each KMA's release knows, recorded by the KMA itself at every start for its own
-- row (kma.listen), beside its release (`version`): in a cluster whose KMAs run different releases
-- (a rolling upgrade), it says which KMAs know which migrations. NULL for a KMA that never recorded
-- one: an entry whose machine has not joined yet, or a KMA not started since this migration.
ALTER TABLE kmas ADD COLUMN schema_version INTEGER;
