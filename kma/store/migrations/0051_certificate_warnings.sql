-- Certificate lifecycle (issue 38): a warning before a certificate expires is an audit event once,
-- when it starts, not at every round. Each row says that the warning `warn_before` seconds ahead
-- (0: the certificate has expired) was given for one certificate: a KMA's or the cluster CA's by
-- serial (hex), an agent's by the SHA-256 of its DER (agents.certificate_fingerprint).
-- Each KMA also records its own listener and node certificates in kma_certificates at start and
-- at renewal, so every KMA can show them all (kma/services/certificates.py).
CREATE TABLE certificate_warnings (
    certificate  TEXT NOT NULL,
    warn_before  INTEGER NOT NULL CHECK (warn_before >= 0),
    warned_at    INTEGER NOT NULL,
    PRIMARY KEY (certificate, warn_before)
);
CREATE INDEX kma_certificates_current ON kma_certificates(kma_id, purpose, issued_at);

-- A Security Officer asked, through any KMA, that this KMA renew its listener certificate now; the
-- KMA itself does it (it holds the key) and clears this (kma/services/certificate_renewal.py).
ALTER TABLE kmas ADD COLUMN certificate_renewal_requested_at INTEGER;
