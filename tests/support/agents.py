"""Encryption agents against a real KMA: enrollment through the `kma agent enroll` command, KMIP
clients on the enrolled files, and a look at the audit trail and the key tables.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from kma.kmip.client import KmipClient
from kma.kmip.tls import agent_context
from tests.support.kma_process import RunningKma, run_kma
from tests.support.kma_process import read_only_db as _db

# What agents change: the key tables as well as the domain tables.
AGENT_TABLES = (
    "agents",
    "key_group_agents",
    "data_units",
    "key_kmip",
    "key_custom_attributes",
    "data_unit_released_keys",
)


def service_address(kma: RunningKma) -> str:
    return str(json.loads((kma.data_dir.parent / "ready.json").read_text())["service_address"])


def demo_passphrase(kma: RunningKma, agent_id: str) -> str:
    return next(a["enrollment_passphrase"] for a in kma.demo["agents"] if a["id"] == agent_id)


def enrolled_demo_agent(kma: RunningKma, tmp_path_factory: Any, agent_id: str) -> Path:
    """A demo agent enrolled with its demo passphrase; returns the folder of its enrolled files."""
    out = tmp_path_factory.mktemp("agent") / agent_id
    enroll(kma, agent_id, out, demo_passphrase(kma, agent_id))
    return out


def general_keys_demo(tmp_path_factory: Any, name: str) -> RunningKma:
    """The demo KMA as a generic KMIP client needs it: the Dallas drives' key policy (tape-30d)
    keeps general keys, allows import and lets agents revoke and destroy."""
    kma = RunningKma.demo_in(tmp_path_factory.mktemp(name))
    try:
        kma.client("co").update_key_policy(
            "tape-30d", agents_may_revoke=True, allow_import=True, general_keys=True
        )
    except BaseException:
        kma.stop()
        raise
    return kma


def new_passphrase(kma: RunningKma, agent_id: str) -> str:
    return kma.client("op").new_enrollment_passphrase(agent_id).passphrase


def enroll(
    kma: RunningKma, agent_id: str, out: Path, passphrase: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """`kma agent enroll`, exactly as an operator runs it (with the CA fingerprint pinned)."""
    secret = out.parent / f"{out.name}.passphrase"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text(passphrase + "\n")
    result = run_kma(
        "agent",
        "enroll",
        "--kma",
        service_address(kma),
        "--agent-id",
        agent_id,
        "--passphrase-file",
        str(secret),
        "--out",
        str(out),
        "--ca-fingerprint",
        kma.fingerprint,
        check=False,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def kmip(agent_dir: Path, address: str | None = None) -> KmipClient:
    """A connected KMIP client on the files enrollment wrote."""
    context = agent_context(agent_dir / "ca.pem", agent_dir / "agent.pem", agent_dir / "agent.key")
    info = json.loads((agent_dir / "agent.json").read_text())
    client = KmipClient(address or info["kma"], context)
    client.connect()
    return client


def events(kma: RunningKma, after: int, operation: str | None = None) -> list[dict[str, Any]]:
    """Audit events after event `after` (all, or of one operation), oldest first."""
    with _db(kma) as db:
        sql = "SELECT * FROM audit_events WHERE id > ?" + (" AND operation = ?" if operation else "")
        params: tuple[Any, ...] = (after, operation) if operation else (after,)
        return [dict(r) for r in db.execute(sql + " ORDER BY id", params)]


def last_event(kma: RunningKma) -> int:
    with _db(kma) as db:
        return int(db.execute("SELECT coalesce(max(id), 0) FROM audit_events").fetchone()[0])


def agent_state(kma: RunningKma) -> dict[str, list[tuple[Any, ...]]]:
    """Everything an agent could have changed (keys outside the pool included)."""
    with _db(kma) as db:
        snap = {t: [tuple(r) for r in db.execute(f"SELECT * FROM {t} ORDER BY rowid")] for t in AGENT_TABLES}
        snap["keys"] = [
            tuple(r) for r in db.execute("SELECT * FROM keys WHERE key_group_id IS NOT NULL ORDER BY id")
        ]
    return snap


def key_row(kma: RunningKma, key_id: str) -> dict[str, Any]:
    with _db(kma) as db:
        row = db.execute("SELECT * FROM keys WHERE id = ?", (key_id,)).fetchone()
        return dict(row) if row else {}
