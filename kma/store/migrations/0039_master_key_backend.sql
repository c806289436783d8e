-- Where each KMA's master key is (issue 31, clusters): 'software' (in memory while unlocked) or
-- 'pkcs11' (in the KMA's own HSM token). Replicated like the rest of the row, so the topology and the
-- manager's Cluster page show it for every KMA. Set when the KMA is made (`kma init`) or joins (a
-- join that sent a token's join key); KMAs made before this migration had software master keys in a
-- cluster (an HSM KMA could not be one); every KMA records its own at each start (kma.listen).
ALTER TABLE kmas ADD COLUMN master_key TEXT NOT NULL DEFAULT 'software'
    CHECK (master_key IN ('software', 'pkcs11'));
