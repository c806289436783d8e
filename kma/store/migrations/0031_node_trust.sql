-- Node trust (issue 26): a cluster node's rqlited lets in only the node certificates of the
-- cluster's current KMAs (kma/cluster/trust.py), not every certificate of the cluster CA. Each KMA's
-- node certificate, as its join recorded it or as the KMA itself publishes it at start; NULL for a
-- KMA of a cluster made before this version until it has started once on this version.
ALTER TABLE kmas ADD COLUMN node_cert_pem TEXT;
