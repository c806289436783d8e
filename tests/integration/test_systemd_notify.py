"""`kma serve` under systemd's `Type=notify`: READY=1 once both listeners serve, STOPPING=1 when
it stops, sent to $NOTIFY_SOCKET as systemd would listen for them (a datagram socket)."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.kma_process import run_kma


def test_kma_serve_says_ready_once_both_listeners_serve_and_says_when_it_stops(tmp_path: Path) -> None:
    data = tmp_path / "kma"
    run_kma("demo", "--data-dir", str(data), "--json")
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listening.bind(str(tmp_path / "notify"))
    listening.settimeout(120)
    ready = tmp_path / "ready.json"
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kma",
            "serve",
            "--data-dir",
            str(data),
            "--management-port",
            "0",
            "--service-port",
            "0",
            "--ready-file",
            str(ready),
        ],
        env={**os.environ, "NOTIFY_SOCKET": str(tmp_path / "notify")},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        said = listening.recv(4096).decode()
        assert said.splitlines()[0] == "READY=1"
        # ... and at that moment both listeners answer
        info = json.loads(ready.read_text())
        trust = ssl.create_default_context(cadata=(data / "tls" / "ca.pem").read_text())
        status = httpx.get(f"https://{info['management_address']}/api/v1/status", verify=trust, timeout=60)
        assert status.status_code == 200
        host, port = info["service_address"].rsplit(":", 1)
        socket.create_connection((host, int(port)), timeout=30).close()
        assert f"STATUS=Serving management on {info['management_address']}" in said
    finally:
        serve.send_signal(signal.SIGTERM)
        output, _ = serve.communicate(timeout=60)
    assert listening.recv(4096) == b"STOPPING=1"
    listening.close()
    assert serve.returncode == 0, output
