-- A key policy's rotation period (issue 38): seconds after a general key's activation when the KMA
-- makes its successor itself (as KMIP Re-Key would, linked both ways). NULL: never. Set when the
-- policy is created and never changed, like its other periods.
ALTER TABLE key_policies ADD COLUMN rotation_period INTEGER;
