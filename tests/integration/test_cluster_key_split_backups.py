"""A key split change on a cluster takes backups from the old members on every KMA (issue 26, item
4): the change made through one KMA gives every KMA the new backup key, and the first node's
`kma.db.before-cluster` (the old split's shares) goes away."""

from __future__ import annotations

from pathlib import Path

from kma.cluster.convert import EMBEDDED_KEPT
from tests.integration.test_backups import cli, quorum, refused, restores
from tests.integration.test_key_split_change import NAMES, NEW, enrol_all
from tests.integration.test_quorum import creds
from tests.support.cluster import add_node, first_node
from tests.support.waiting import wait_until


def test_a_change_through_one_kma_supersedes_old_core_backups_for_every_kma(tmp_path: Path) -> None:
    # Given a two-KMA cluster whose first node kept its embedded store, and a core security backup
    # of the first key split
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    try:
        second.start()
        assert (first.data_dir / EMBEDDED_KEPT).exists()
        old_core = tmp_path / "old.kmacore"
        cli(first, "so", "backup", "core", "--out", str(old_core))
        old_quorum = quorum(first)

        # When the key split changes through the second KMA
        so = second.client("so")
        change = so.change_key_split(2, NAMES, credentials=creds(second, "carol", "dave", "erin"))
        assert enrol_all(second, change).state == "executed"

        # Then the first node removes the copy holding the old split's shares, and says so
        wait_until(lambda: not (first.data_dir / EMBEDDED_KEPT).exists(), 15.0, "the old embedded copy gone")
        removal = first.client("auditor").list_audit_events(operation="cluster.key_split").items
        assert any(EMBEDDED_KEPT in e.message and e.kma_id == "kma-dal-1" for e in removal)

        # ... and a database backup the first KMA takes, after a new core security backup taken
        # through the second, opens with the new core security backup only
        new_core = tmp_path / "new.kmacore"
        cli(second, "so", "backup", "core", "--out", str(new_core))
        database = tmp_path / "first-after.kmabackup"
        cli(first, "backup", "backup", "create", "--out", str(database))
        reason = refused(tmp_path / "old-core", old_core, database, old_quorum)
        assert "taken after a key split change" in reason
        new_quorum = [{"name": name, "passphrase": passphrase} for name, passphrase in NEW[1:]]
        restores(tmp_path / "new", new_core, database, new_quorum)
    finally:
        second.stop()
        first.stop()
