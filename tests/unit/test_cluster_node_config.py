"""The cluster node's configuration file and what travels to rqlite: clear errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from kma.cluster.node_config import NodeConfig, load_node_config
from kma.errors import ValidationFailed
from kma.store.rqlite import split_script
from kma.store.rqlite_http import rqlite_statement


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "node.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_written_configuration_reads_back_the_same(tmp_path: Path) -> None:
    config = NodeConfig("kma-2", "10.0.0.2:4002", "127.0.0.1:4001", False, ("10.0.0.1:4002",))
    assert load_node_config(write(tmp_path, config.to_toml())) == config


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ('raft_address = "a:1"\nhttp_address = "127.0.0.1:2"\n', "node_id"),
        ('node_id = "k"\nraft_address = "nohost"\nhttp_address = "127.0.0.1:2"\n', "raft_address"),
        ('node_id = "k"\nraft_address = "a:1"\nhttp_address = "0.0.0.0:4001"\n', "loopback"),
        ('node_id = "k"\nraft_address = "a:1"\nhttp_address = "127.0.0.1:2"\nvoter = "yes"\n', "voter"),
        ('node_id = "k"\nraft_address = "a:1"\nhttp_address = "127.0.0.1:2"\njoin = ["b"]\n', "join"),
        ("node_id = ", "cannot be read"),
    ],
)
def test_a_bad_configuration_is_refused_naming_the_field(tmp_path: Path, text: str, names: str) -> None:
    with pytest.raises(ValidationFailed, match=names):
        load_node_config(write(tmp_path, text))


def test_migration_scripts_split_into_statements_with_trigger_bodies_whole() -> None:
    script = (
        "-- a comment\nCREATE TABLE t (x);\n"
        "CREATE TRIGGER tr AFTER INSERT ON t BEGIN\n  UPDATE t SET x = 1;\n  SELECT 1;\nEND;\n-- done\n"
    )
    statements = split_script(script)
    assert (
        len(statements) == 2 and statements[1].startswith("CREATE TRIGGER") and "SELECT 1;" in statements[1]
    )


def test_bytes_travel_as_blob_literals_and_a_text_that_would_read_as_one_is_refused() -> None:
    assert rqlite_statement("INSERT INTO k VALUES (?)", (b"\x01\xff",)) == [
        "INSERT INTO k VALUES (?)",
        "x'01ff'",
    ]
    assert rqlite_statement("SELECT :a", {"a": "plain"}) == ["SELECT :a", {"a": "plain"}]
    with pytest.raises(ValidationFailed, match="binary literal"):
        rqlite_statement("INSERT INTO k VALUES (?)", ("x'41'",))
