-- Data units "readable, needs re-key" (issue 47; bench/scale.py at a million keys: 78-80 ms, as
-- slowly on a fresh store, so the plan and not the size). Such units are named from their keys in a
-- state other than Protect-and-Process (kma/domain/lifecycle.py); the waiting states (Generated,
-- Ready, Pre-active, Withheld) were four walks of the whole key pool (the activation index's NULL
-- entries, up to 100,000 keys, each row read), although a pool key is bound to no data unit. They
-- are one condition now, a waiting key bound to a unit, read from this index of just those keys.
-- The activation time leads so that the planner, which has no statistics (a KMA never runs
-- ANALYZE), prefers it to the activation index for that equality.
CREATE INDEX keys_waiting_on_unit ON keys (activated_at, data_unit_id)
    WHERE activated_at IS NULL AND destroyed_at IS NULL AND data_unit_id IS NOT NULL;
