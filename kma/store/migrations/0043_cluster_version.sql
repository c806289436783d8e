-- The cluster version (issue 30; kma/store/cluster_version.py, kma/cluster/version.py, docs/upgrades.md): what every KMA of the
-- cluster can do together, raised under quorum once every KMA runs a release that supports the
-- next one. No row: cluster version 1, what a cluster of release 0.1.0 is. `needs_release` is the
-- first release that supports it, so a KMA too old for it can name the release to install.
CREATE TABLE cluster_version (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    version        INTEGER NOT NULL CHECK (version >= 1),
    needs_release  TEXT NOT NULL,
    raised_at      INTEGER NOT NULL,
    raised_by_op   TEXT NOT NULL
);
-- A cluster version is only ever raised: going back could let in a release too old for the
-- contract migrations that ran.
CREATE TRIGGER cluster_version_only_up BEFORE UPDATE OF version ON cluster_version
WHEN NEW.version <= OLD.version
BEGIN
    SELECT RAISE(ABORT, 'the cluster version is only ever raised');
END;
-- Release 0.1.0 predates the cluster version and cannot check it itself (later releases do, before
-- writing anything). Every start of a KMA records its release in its row (kma.listen); once the
-- cluster version is 2 or more, a start of release 0.1.0 is refused there, so the KMA does not
-- start (release 0.1.0 shows this refusal as "The change breaks a rule of the store").
CREATE TRIGGER cluster_version_refuses_0_1_0 BEFORE UPDATE OF version ON kmas
WHEN NEW.version = '0.1.0' AND (SELECT version FROM cluster_version WHERE id = 1) >= 2
BEGIN
    SELECT RAISE(ABORT, 'This cluster runs at a cluster version release 0.1.0 does not support: install release 0.2.0 or later on this KMA.');
END;
