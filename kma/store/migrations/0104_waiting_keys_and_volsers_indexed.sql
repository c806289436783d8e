-- Lists that walked the whole key pool or every data unit for a few rows (issue 47: 35-68 ms on a
-- million keys and as slowly on a fresh store of 400 keys and a 20,000-key pool, so the plan and the
-- work per row, not the size).
--
-- Keys in state Pre-active or Withheld were read from the activation index's NULL entries, which
-- are every pool key (up to 100,000 per KMA), each row read to test its group and withholding.
-- Each state has its own index of just its keys now, in the list's order (activation time, then
-- row number); the conditions are those of kma/domain/lifecycle.py, term for term, so that the
-- planner, which has no statistics (a KMA never runs ANALYZE), sees that the index holds the rows.
CREATE INDEX keys_pre_active ON keys (activated_at)
    WHERE activated_at IS NULL AND destroyed_at IS NULL AND key_group_id IS NOT NULL;
CREATE INDEX keys_withheld_waiting ON keys (activated_at)
    WHERE activated_at IS NULL AND destroyed_at IS NULL AND withheld_at IS NOT NULL AND key_group_id IS NULL;
-- The pool's keys are Generated or Ready by their backup mark against the newest live backup: every
-- column that decides it is in this index, so the pool's keys in either state are counted, and found
-- when they are few, without reading a row (kma/services/paging.py, `Filter.own_index`).
CREATE INDEX keys_in_pool ON keys (activated_at, backup_mark, destroyed_at, key_group_id, withheld_at)
    WHERE activated_at IS NULL AND destroyed_at IS NULL AND key_group_id IS NULL AND withheld_at IS NULL;
-- A media pool's tapes (the data units' pool filter) are those whose volser, upper case, is in the
-- pool's range or matches its pattern: tested on every data unit in turn (0.4-1 s for a pool of few
-- tapes among 200,000), now a range of this index (kma/services/media/media_pools.py, IN_POOL),
-- which holds the volser as stored too, so that the pool's units are found in it alone.
CREATE INDEX data_units_volser ON data_units (upper(id), id);
-- Compromised keys (few) in the other orders the list offers them in (created, ID, data unit): the
-- page walked the whole key list in that order to find them (tests/unit/test_list_query_plans.py).
CREATE INDEX keys_compromised_created ON keys (created_at) WHERE compromised_at IS NOT NULL;
CREATE INDEX keys_compromised_id ON keys (id) WHERE compromised_at IS NOT NULL;
CREATE INDEX keys_compromised_unit ON keys (data_unit_id, activated_at) WHERE compromised_at IS NOT NULL;
