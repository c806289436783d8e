"""A node's rqlited restarts whenever the cluster's members change (kma/cluster/trust.py); its KMA's
users are served meanwhile (issue 39, item 6): reads and sign-ins wait for it, bounded, rather than
being answered 503. A real cluster node whose rqlited restarts as a new KMA entry is pinned."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kms_client import KmsError
from tests.support.cluster import BINARY, add_node, first_node

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")


def test_reads_and_sign_ins_are_served_while_the_nodes_rqlited_restarts(tmp_path: Path) -> None:
    first, ca = first_node(tmp_path / "a")
    try:
        officer = first.client("so")
        failures: list[KmsError] = []
        served = [0]
        done = threading.Event()

        def a_user() -> None:  # reads and signs in, again and again
            while not done.is_set():
                try:
                    officer.list_key_policies()
                    officer.get_kma("kma-dal-1")
                    first.client("auditor").close()
                    served[0] += 1
                except KmsError as exc:
                    failures.append(exc)

        user = threading.Thread(target=a_user)
        user.start()
        try:  # When a KMA entry is added, the first node restarts its rqlited to trust its machine
            add_node(first, ca, tmp_path, "kma-dal-2")
        finally:
            done.set()
            user.join()
        # Then nothing the user asked meanwhile failed
        assert served[0] > 0
        assert [str(f) for f in failures] == []
    finally:
        first.stop()
