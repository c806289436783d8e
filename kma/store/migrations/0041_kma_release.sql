-- The software release each KMA runs (`kma.__version__`), recorded by the KMA itself at every start
-- for its own row (kma.listen), so the manager's KMAs list shows what each one last started with.
-- NULL for a KMA that never recorded one: an entry whose machine has not joined yet, or a KMA not
-- started since this migration. Unlike `version`, which the KMA that made the row wrote, this is
-- only ever the KMA's own word.
ALTER TABLE kmas ADD COLUMN release TEXT;
