"""The migrations' rule (kma/store/schema.py, docs/upgrades.md): expand migrations apply when the
first KMA upgrades, contract ones only where no older code runs; an unknown one means a newer release."""

from __future__ import annotations

from pathlib import Path

import pytest

from kma.store import schema


@pytest.fixture
def later(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Two migrations of a later release: an expand one, then a contract one."""
    (tmp_path / "9001_new_table.sql").write_text("-- adds a table\nCREATE TABLE t (id INTEGER);\n")
    contract = "-- drops a column\n-- phase: contract\nALTER TABLE t DROP id;\n"
    (tmp_path / "9002_drop_column.sql").write_text(contract)
    monkeypatch.setenv(schema.EXTRA_FOR_TESTS, str(tmp_path))
    return [9001, 9002]


def test_every_shipped_migration_is_an_expand_one() -> None:
    assert {m.phase for m in schema.migrations()} == {"expand"}


def test_contract_migrations_wait_where_older_code_may_run(later: list[int]) -> None:
    shipped = {m.version for m in schema.migrations()} - set(later)
    assert [m.version for m in schema.pending(shipped, contract=False)] == [9001]
    assert [m.version for m in schema.pending(shipped, contract=True)] == [9001, 9002]
    assert [m.phase for m in schema.pending(shipped, contract=True)] == ["expand", "contract"]


def test_a_store_with_a_migration_this_release_does_not_know_is_refused_naming_both_versions() -> None:
    known = schema.latest_schema_version()
    applied = {m.version for m in schema.migrations()} | {known + 4}
    with pytest.raises(schema.StoreFromNewerRelease) as refused:
        schema.pending(applied, contract=False)
    assert refused.value.message == (
        f"This store was migrated by a newer KMA release (schema {known + 4}; this release knows up to "
        f"{known}). Install that release or later."
    )


def test_a_clusters_store_migrated_by_a_newer_release_is_served_beside_it() -> None:
    # Its KMAs are upgraded one at a time: the newer release's expand migrations are already in the
    # cluster's store when a KMA of this release restarts (a too new cluster version refuses it).
    known = schema.latest_schema_version()
    applied = {m.version for m in schema.migrations()} | {known + 4}
    assert schema.pending(applied, contract=False, beside_newer=True) == []
