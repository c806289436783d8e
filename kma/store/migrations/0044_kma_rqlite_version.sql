-- The rqlited release each cluster node runs (kma/cluster/rqlited.py VERSION, pinned by
-- scripts/build-rqlite.sh), recorded by the KMA for its own row at every start (kma.listen), beside
-- its release and schema: during a rolling move to a later rqlite 8.x (docs/upgrades.md) it says
-- which nodes have moved. NULL on an embedded KMA (no rqlited) and for a node not started since.
ALTER TABLE kmas ADD COLUMN rqlite_version TEXT;
