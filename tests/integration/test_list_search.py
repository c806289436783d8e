"""Search in the lists finds what it found when it tested each row, now from trigram indexes
(migration 0035): an exact ID or volser, a prefix, a fragment, a miss; SQLite's LIKE's case rules
(ASCII letters in any case, other letters as typed). The indexes follow every write, on one KMA
and in a cluster (built in the background since 0048: tests/integration/test_list_search_background.py),
and a store that had rows before the migration has them indexed."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kma.store import fts, schema
from kma.store import sqlite as embedded
from kms_client.paging import iter_all
from tests.integration.helpers import error_of, raw_http
from tests.support.cluster import three_kmas
from tests.support.kma_process import RunningKma, read_only_db
from tests.support.waiting import wait_until

TEXT_TABLES = ("keys_text", "data_units_text", "agents_text", "users_text", "pending_quorum_ops_text")


def like(search: str, *values: str | None) -> bool:
    """SQLite's `value LIKE '%search%'`: a substring, ASCII letters folded, every other character as is."""
    fold = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
    return any(v is not None and search.translate(fold) in v.translate(fold) for v in values)


def found(list_page: Callable[..., Any], search: str) -> list[str]:
    return sorted(item.id for item in iter_all(list_page, search=search, limit=50))


def expected(items: Iterable[Any], fields: tuple[str, ...], search: str) -> list[str]:
    return sorted(item.id for item in items if like(search, *(getattr(item, f) for f in fields)))


def check_searches(kma: RunningKma, typed: list[str]) -> None:
    """Every list answers each typed text with exactly the rows that hold it. Compared again
    until the rows stop changing under it (a key pool refilling, replication arriving): a search
    that misses or adds a row keeps disagreeing, and fails this."""
    op, so = kma.client("op"), kma.client("so")
    lists = {
        op.list_keys: ("id", "data_unit_id", "key_group_id"),
        op.list_data_units: ("id", "description"),
        op.list_agents: ("id", "description", "site_id"),
        so.list_users: ("id", "name"),
        so.list_quorum_operations: ("id", "summary", "type", "requested_by"),
    }

    def disagreements() -> list[tuple[str, str]]:
        wrong = []
        for list_page, fields in lists.items():
            everything = list(iter_all(list_page, limit=1000))
            wrong += [
                (list_page.__name__, search)
                for search in typed
                if found(list_page, search) != expected(everything, fields, search)
            ]
        return wrong

    wait_until(lambda: not disagreements(), 60, f"every list's search agreeing with its rows: {typed}")


def all_indexed(db: RunningKma | Path) -> bool:
    """Every list's rows are in its search index (the KMA's writer indexes them in the background,
    migration 0048): FTS5's integrity check expects every row of its table indexed."""
    with read_only_db(db) as conn:
        return all(index.behind(conn) is False for index in fts.LISTS.values())


def test_search_finds_ids_volsers_prefixes_and_fragments_as_before(fresh_kma: RunningKma) -> None:
    op = fresh_kma.client("op")
    op.create_data_unit("ZQ4711", "Offsite vault Café, shelf 9")
    op.create_data_unit("zq4712", "Onsite rack")
    key = op.issue_key("backup-dallas", "ZQ4711")
    typed = [
        "ZQ4711",  # an exact volser (and the key that encrypts it)
        "zq47",  # a prefix, in the other case
        "site vau",  # a fragment of a description, across a space
        key.id,
        key.id[:6].lower(),
        key.id[9:17],  # a key's ID, its prefix, a fragment
        "backup-dal",
        "dallas",
        "operator",  # a key group, a site, a user's name
        "no such tape",  # a miss
        "café",
        "CAFÉ",  # LIKE folds ASCII only: É is not é
        "zq",
        "%",
        "_",  # shorter than a trigram; LIKE's wildcards taken literally
    ]
    check_searches(fresh_kma, typed)


def test_the_search_goes_by_search_and_by_its_old_name_q(fresh_kma: RunningKma) -> None:
    """`search` is the search's query parameter; `q`, its name in release 0.1.0, which that
    release's client still sends, finds the same rows; the document names `search` only."""
    op = fresh_kma.client("op")
    op.create_data_unit("QN0001", "Old name, new name")
    op.create_data_unit("ZZ0001", "Not searched for")
    with raw_http(fresh_kma, op.token) as http:
        by_search = http.get("/data-units", params={"search": "qn000"})
        by_q = http.get("/data-units", params={"q": "qn000"})
        both = http.get("/data-units", params={"search": "qn000", "q": "qn000"})
        document = http.get("/openapi.json").json()
    assert [u["id"] for u in by_search.json()["items"]] == ["QN0001"]
    assert by_q.json() == by_search.json()
    assert both.status_code == 422
    assert "once" in error_of(both)["message"]
    listed = {p["name"] for p in document["paths"]["/api/v1/data-units"]["get"]["parameters"]}
    assert "search" in listed and "q" not in listed


def test_the_index_follows_each_change(fresh_kma: RunningKma) -> None:
    """A new row is found at once (before the writer indexed it, and after), a changed description by
    its new words only."""
    op = fresh_kma.client("op")
    op.create_data_unit("VX0001", "In the Dallas vault")
    assert found(op.list_data_units, "dallas vault") == ["VX0001"]
    op.update_data_unit("VX0001", description="Sent to Austin")
    assert found(op.list_data_units, "dallas vault") == []
    assert found(op.list_data_units, "to aus") == ["VX0001"]
    key = op.issue_key("backup-dallas", "VX0001")
    assert key.id in found(op.list_keys, "vx000")
    assert found(op.list_keys, key.id[3:11]) == [key.id]
    wait_until(lambda: all_indexed(fresh_kma), 60, "the writer indexing every new row")
    fresh_kma.stop()
    with sqlite3.connect(fresh_kma.data_dir / "kma.db") as db:
        for table in TEXT_TABLES:  # FTS5 checks its index against the table, row by row
            db.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")


def test_a_store_from_before_the_index_has_its_rows_indexed(tmp_path: Path) -> None:
    conn = embedded.connect(tmp_path / "kma.db")
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)")
    for migration in schema.migrations():
        if migration.version < 35:
            done = f"INSERT INTO schema_migrations VALUES ({migration.version});"
            conn.executescript(f"BEGIN;\n{migration.sql}\n{done}\nCOMMIT;")
    conn.execute(
        "INSERT INTO data_units (id, description, created_at, updated_at) VALUES "
        "('OLD001', 'written before 0035', 0, 0)"
    )
    conn.commit()
    embedded.migrate(conn)
    rows = conn.execute("SELECT id FROM data_units_text WHERE data_units_text MATCH '\"efore 003\"'")
    assert [r[0] for r in rows] == ["OLD001"]
    for table in TEXT_TABLES:
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
    conn.close()


def test_search_in_a_cluster_finds_what_another_kma_wrote(tmp_path: Path) -> None:
    """A tape registered on one KMA is found by fragment on another: from the rows above the index's
    mark as soon as they arrive, and once a KMA's writer indexed them through the cluster, from the
    index on every node."""
    with three_kmas(tmp_path) as kmas:
        writer, reader = kmas[1].client("op"), kmas[2].client("op")
        writer.create_data_unit("CL0042", "Cluster vault tape")
        key = writer.issue_key("backup-dallas", "CL0042")
        wait_until(lambda: found(reader.list_data_units, "ster vau") == ["CL0042"], 60, "the unit found")
        wait_until(lambda: found(reader.list_keys, key.id[4:12]) == [key.id], 60, "the key found")
        check_searches(kmas[2], ["CL0042", "cl00", "vault", key.id[:5], "no such tape"])
        replica = kmas[2].data_dir / "cluster" / "rqlite" / "db.sqlite"
        wait_until(lambda: all_indexed(replica), 60, "the cluster indexing every new row")
        check_searches(kmas[2], ["CL0042", "cl00", "vault", key.id[:5], "no such tape"])
