-- Agents renew their own certificates (issue 38): an agent holding a valid certificate asks for
-- its next one over mutual TLS (POST /v1/renew on the service listener, no passphrase). The one it
-- replaced keeps working until it expires (TLS refuses it then), so a drive's open connections
-- are not cut while it moves to the new one; enrolling again with a passphrase clears it.
ALTER TABLE agents ADD COLUMN previous_certificate_fingerprint TEXT;
