"""No key is ever stored, logged or returned in the clear.

The test first gets a key's material the way an attacker holding the data directory would
(the local unlock key file opens the master key, which opens the stored key), so it knows
exactly which bytes to look for; then it searches every file of the data directory, the log
and the server's console output for them: raw, hex (both cases) and base64 (both alphabets,
with and without padding). The master key is looked for the same way.
"""

from __future__ import annotations

import base64
import signal
from pathlib import Path

from kma.crypto import WrappingKey
from tests.integration.helpers import raw_http
from tests.support.kma_process import RunningKma, read_only_db


def spellings(secret: bytes) -> dict[str, bytes]:
    b64, url = base64.b64encode(secret), base64.urlsafe_b64encode(secret)
    return {
        "raw": secret,
        "hex": secret.hex().encode(),
        "HEX": secret.hex().upper().encode(),
        "base64": b64,
        "base64 unpadded": b64.rstrip(b"="),
        "base64url unpadded": url.rstrip(b"="),
    }


def found_in(data: bytes, secrets: dict[str, bytes]) -> list[str]:
    return [
        f"{name} ({spelling})"
        for name, secret in secrets.items()
        for spelling, needle in spellings(secret).items()
        if needle in data
    ]


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def recover_secrets(kma: RunningKma, key_ids: list[str]) -> dict[str, bytes]:
    """What someone with a copy of the data directory can decrypt: the master key and every key."""
    local = WrappingKey((kma.data_dir / "unlock.key").read_bytes())
    with read_only_db(kma) as db:
        (kma_id,) = db.execute("SELECT id FROM kmas").fetchone()
        blob = db.execute("SELECT autounlock_master FROM kmas WHERE id = ?", (kma_id,)).fetchone()[0]
        master = WrappingKey(local.unwrap(f"autounlock:{kma_id}", blob))
        recovered = {"master key": master.raw()}
        for key_id in key_ids:
            wrapped = db.execute("SELECT material_wrapped FROM keys WHERE id = ?", (key_id,)).fetchone()[0]
            recovered[f"key {key_id}"] = master.unwrap(f"key:{key_id}", wrapped)
    assert all(len(secret) == 32 for secret in recovered.values())
    return recovered


def test_a_new_key_is_nowhere_in_the_clear(fresh_kma: RunningKma) -> None:
    op = fresh_kma.client("op")
    op.create_data_unit("MAT001", "Material test cartridge")
    key = op.issue_key("backup-dallas", "MAT001")
    others = [k.id for k in op.iter_keys(state="protect_and_process") if k.id != key.id]
    secrets = recover_secrets(fresh_kma, [key.id, *others])

    # Not in anything the API returns about it.
    with raw_http(fresh_kma, op.token) as http:
        answers = b"".join(
            http.get(path).content
            for path in (f"/keys/{key.id}", "/keys?limit=1000", f"/keys/{key.id}/history", "/dashboard")
        )
    assert found_in(answers, secrets) == []

    # Not in any file while the KMA runs (the WAL holds the newest pages)...
    running = {
        str(p.relative_to(fresh_kma.data_dir)): found_in(p.read_bytes(), secrets)
        for p in files_under(fresh_kma.data_dir)
    }
    assert "kma.db" in running and "logs/kma.log" in running
    assert {f: hits for f, hits in running.items() if hits} == {}

    # ... nor after it stopped, nor in what it printed.
    op.close()  # no open connection to wait for: the KMA stops at once
    process = fresh_kma.process
    assert process is not None and process.stdout is not None
    process.send_signal(signal.SIGTERM)
    console = process.stdout.read().encode()
    process.wait(timeout=20)
    fresh_kma.stop()
    assert "CA fingerprint" in console.decode()
    assert found_in(console, secrets) == []
    stopped = {
        str(p.relative_to(fresh_kma.data_dir)): found_in(p.read_bytes(), secrets)
        for p in files_under(fresh_kma.data_dir)
    }
    assert {f: hits for f, hits in stopped.items() if hits} == {}


def test_the_search_would_find_material_if_it_were_there(tmp_path: Path) -> None:
    """The search itself works: material written in any of its spellings is found."""
    secret = bytes(range(32))
    for spelling, needle in spellings(secret).items():
        leaked = tmp_path / f"{spelling}.log"
        leaked.write_bytes(b"2026-01-01 INFO issued key: " + needle + b"\n")
        assert f"k ({spelling})" in found_in(leaked.read_bytes(), {"k": secret})
