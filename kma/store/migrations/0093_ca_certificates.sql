-- The cluster CA's earlier certificates (issue 38: the CA rolls over). A renewal gives the CA a new
-- certificate for the same name and key (kma/services/ca_renewal.py); the one it replaces is kept
-- here so that a manager or agent that pinned it is shown the renewal of what it trusted, and so
-- that backups keep naming the cluster by its first CA certificate.
CREATE TABLE ca_certificates (
    serial TEXT PRIMARY KEY,
    cert_pem TEXT NOT NULL,
    not_after INTEGER NOT NULL,
    replaced_at INTEGER NOT NULL
);
