-- Audit forwarding to a syslog collector (RFC 5424 over TLS, RFC 5425): the cluster's setting,
-- made by a Security Officer through the API, and each KMA's position in its own chain.

CREATE TABLE audit_forwarding (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    address     TEXT NOT NULL,      -- HOST:PORT of the collector
    ca_pem      TEXT NOT NULL,      -- the CA its certificate must chain to (its name must match HOST)
    enabled     INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

-- The last event of this KMA's chain the collector at `destination` was sent. A new destination
-- starts from the head of the chain when it is set: it gets events from then on.
CREATE TABLE audit_forwarding_positions (
    kma_id       TEXT PRIMARY KEY,
    destination  TEXT NOT NULL,
    chain_seq    INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
