-- Deactivated keys from an index of their own (issue 20). A key is Deactivated once its
-- deactivate_at has passed: the end of its cryptoperiod, which activation sets from its policy and
-- a KMIP Revoke brings forward to the moment of revocation, in the same UPDATE (times bound as
-- parameters). Revocation breaks the activation-time bounds the other states are ranges of, so the
-- filter walked every activated key (2.4 s at a million keys); now it reads the range
-- deactivate_at <= now and sorts those keys for the page: quick while few keys are Deactivated,
-- as keys are destroyed once their cryptoperiod is over (a store keeping a great many would sort
-- them all for each page).
CREATE INDEX keys_deactivated ON keys(deactivate_at) WHERE destroyed_at IS NULL;
