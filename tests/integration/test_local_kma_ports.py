"""Local mode keeps its ports: an agent enrolled against the local KMA (its kmas.json) finds it
again after a restart. Only a port another program took is replaced, and that is said."""

from __future__ import annotations

import socket
from pathlib import Path

from app.local.local_kma import LocalKma
from app.local.local_mode import banner_text


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def test_restarts_keep_the_ports_and_a_taken_one_is_replaced_and_said(tmp_path: Path) -> None:
    kma = LocalKma(tmp_path / "local-kma")
    kma.create_demo()
    try:
        first = kma.start()
        kma.stop()
        # When it starts again, it listens where agents were told it is
        second = kma.start()
        assert (second.management_address, second.service_address) == (
            first.management_address,
            first.service_address,
        )
        assert second.moved_from == ()
        kma.stop()

        # When another program took the service port meanwhile
        with socket.socket() as squatter:
            squatter.bind(("127.0.0.1", _port(first.service_address)))
            squatter.listen()
            third = kma.start()
            # Then only that port changes, and the banner says so
            assert third.management_address == first.management_address
            assert third.service_address != first.service_address
            assert third.moved_from == (_port(first.service_address),)
            text = banner_text(kma, third, None)
            assert f"usual port was taken ({_port(first.service_address)})" in text
            assert third.service_address in text
    finally:
        kma.stop()


def test_the_local_kmas_files_name_the_ports_it_runs_on_so_the_cli_finds_it(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys
    import tomllib

    kma = LocalKma(tmp_path / "local-kma")
    kma.create_demo()
    try:
        ready = kma.start()
        # Then kma.toml and demo-credentials.json say where it listens (not the demo's 8443)
        toml = tomllib.loads((kma.data_dir / "kma.toml").read_text())
        assert (toml["management_address"], toml["service_address"]) == (
            ready.management_address,
            ready.service_address,
        )
        demo = json.loads((kma.data_dir / "demo-credentials.json").read_text())
        assert demo["management_address"] == ready.management_address
        # And the README's CLI example reaches it by its data directory
        so = next(u["passphrase"] for u in demo["users"] if u["id"] == "so")
        (tmp_path / "so.pass").write_text(so)
        listed = subprocess.run(
            [
                sys.executable,
                "-m",
                "kma",
                "quorum",
                "list",
                "--data-dir",
                str(kma.data_dir),
                "--user",
                "so",
                "--passphrase-file",
                str(tmp_path / "so.pass"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert listed.returncode == 0, listed.stderr
    finally:
        kma.stop()
