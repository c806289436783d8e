-- Media as the white paper plans it (issue 41, docs/media.md). A media pool: the volsers of a
-- pattern (`E*`) or range (`E00000-E49999`), bound to the key group its tapes' keys are made in,
-- or never encrypted (a write key for one of its tapes is refused), or read only (a migrated
-- generation's old pool: its tapes are read, never written).
CREATE TABLE media_pools (
    id               TEXT PRIMARY KEY,
    description      TEXT NOT NULL DEFAULT '',
    pattern          TEXT NOT NULL,
    key_group_id     TEXT REFERENCES key_groups(id),
    never_encrypted  INTEGER NOT NULL DEFAULT 0,
    read_only        INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    CHECK (never_encrypted = 0 OR key_group_id IS NULL)
);

-- The cluster's media settings: a write key for a volser of no pool (serve, warn, refuse), and
-- a write the drive's generation cannot make (warn, refuse).
ALTER TABLE cluster ADD COLUMN media_unmatched TEXT NOT NULL DEFAULT 'serve';
ALTER TABLE cluster ADD COLUMN media_generation_rule TEXT NOT NULL DEFAULT 'warn';

-- A drive's model and generation (LTO-5..9, T10000A-D, T9840A-D), its library and partition.
ALTER TABLE agents ADD COLUMN drive_model TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN drive_generation TEXT;
ALTER TABLE agents ADD COLUMN library TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN library_partition TEXT NOT NULL DEFAULT '';

-- The generation of the drive that last wrote the tape from BOT (or first wrote it): what every
-- later append is judged by. Indexed with the ID, the Data units page's order, so a filter by
-- writer reads its tapes in order rather than sorting them.
ALTER TABLE data_units ADD COLUMN writer_generation TEXT;
CREATE INDEX data_units_by_writer ON data_units (writer_generation, id) WHERE writer_generation IS NOT NULL;
