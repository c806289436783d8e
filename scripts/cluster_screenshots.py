"""Cluster page screenshots: one site with one KMA (a demo KMA, signed in as admin), and
synthetic answers no single demo KMA can give (two sites with a KMA down; twenty KMAs).
With --three-kmas: a real cluster of three KMAs (each running rqlited), one killed. With
--failover: the same, the manager's own KMA killed (it goes on with another).

    python scripts/cluster_screenshots.py [--out docs/screenshots] [--three-kmas | --failover]

``scripts/screenshots.py`` renders the real page with every other page and calls
``render_synthetic`` for the other two.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def render_synthetic(out: Path, grab: Callable[[Any, Path], Path]) -> list[Path]:
    from tests.support.topologies import (
        ShownOnly,
        twenty_kmas,
        two_sites_and_a_witness_boston_down,
        two_sites_one_down,
    )
    from ui.pages.cluster import ClusterPage

    paths = []
    for name, answer, select in (
        ("cluster_two_sites.png", two_sites_one_down(), "kma-bos-2"),
        ("cluster_two_sites_witness.png", two_sites_and_a_witness_boston_down(), "witness-1"),
        ("cluster_twenty.png", twenty_kmas(), None),
    ):
        page = ClusterPage(ShownOnly(frozenset({"security_officer"})))  # type: ignore[arg-type]
        page.resize(1280, 800)
        page.show()
        page.show_topology(answer)
        if select:
            page.scene.nodes[select].setSelected(True)
        paths.append(grab(page, out / name))
        page.close()
    return paths


@contextmanager
def three_kmas() -> Iterator[list[Any]]:
    """A real three-KMA cluster on loopback (tests/support/cluster.py), stopped afterwards."""
    import tempfile

    from tests.support.cluster import three_kmas as cluster_of_three

    with cluster_of_three(Path(tempfile.mkdtemp(prefix="kms-three-kmas-"))) as kmas:
        yield kmas


def wait_for(ops: Any, shown: Callable[[], bool]) -> None:
    import time

    from manager.screenshots import settle

    deadline = time.monotonic() + 30
    while not shown():
        if time.monotonic() > deadline:
            raise SystemExit("the manager did not show what was expected")
        settle(ops, timeout=1.0)


def cluster_page(controller: Any, kma: Any) -> tuple[Any, Any]:
    """The manager signed in to `kma` as the Security Officer, on the Cluster page: window, page."""
    from app.session.profiles import ConnectionProfile
    from app.session.sign_in import sign_in
    from manager.screenshots import SIZE

    profile = ConnectionProfile("Dallas cluster", kma.address, "so", kma.fingerprint, kma.ca_pem)
    window = controller.signed_in(sign_in(profile, kma.passphrases["so"]), profile)
    window.resize(*SIZE)
    window.show()
    window.show_page("cluster")
    return window, window.page("cluster")


def render_three_kmas_one_down(out: Path) -> Path:
    """Signed in to the first KMA of three as the Security Officer; a KMA other than the leader is
    killed, and the page drawn once it shows it not responding."""
    from screenshot_session import offscreen_manager

    from manager.screenshots import grab

    app, controller, tmp = offscreen_manager("kms-cluster-three-")
    with three_kmas() as kmas:
        window, page = cluster_page(controller, kmas[0])
        wait_for(
            controller.ops,
            lambda: len(page.scene.nodes) == 3 and all(n.kma.responding for n in page.scene.nodes.values()),
        )
        victim = next(k for k, n in page.scene.nodes.items() if k != "kma-dal-1" and not n.kma.leader)
        kmas[[k.client().get_status().kma_id for k in kmas].index(victim)].kill()
        wait_for(controller.ops, lambda: not page.scene.nodes[victim].kma.responding)
        page.scene.nodes[victim].setSelected(True)
        path = grab(window, out / "cluster_three_one_down.png")
        window.close()
        controller.ops.wait_idle(3000)
        del app
        return path


def render_failover(out: Path) -> Path:
    """Signed in to a KMA of three that is not the leader; that KMA is killed, the page refreshed:
    the manager goes on with another KMA and says so in the status bar."""
    from screenshot_session import offscreen_manager

    from manager.screenshots import grab
    from tests.support.cluster import not_the_leader

    app, controller, tmp = offscreen_manager("kms-cluster-failover-")
    with three_kmas() as kmas:
        connected, _others = not_the_leader(kmas)
        window, page = cluster_page(controller, connected)
        wait_for(
            controller.ops, lambda: len(controller.session.profile.kmas) == 3 and len(page.scene.nodes) == 3
        )
        connected.kill()
        window.refresh_current()
        wait_for(controller.ops, lambda: "stopped answering" in window.statusBar().currentMessage())
        wait_for(controller.ops, lambda: sum(not n.kma.responding for n in page.scene.nodes.values()) == 1)
        path = grab(window, out / "cluster_failover.png")
        window.close()
        controller.ops.wait_idle(3000)
        del app
        return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--three-kmas", action="store_true", help="a real three-KMA cluster, one killed")
    parser.add_argument(
        "--failover",
        action="store_true",
        help="a real three-KMA cluster, the manager's KMA killed: it goes on with another",
    )
    args = parser.parse_args()
    if args.three_kmas:
        print(render_three_kmas_one_down(args.out))
        return 0
    if args.failover:
        print(render_failover(args.out))
        return 0

    from screenshot_session import offscreen_manager, signed_in_to_demo

    from manager.screenshots import SIZE, grab, settle

    app, controller, tmp = offscreen_manager("kms-cluster-screenshots-")
    with signed_in_to_demo(controller, tmp) as (signed, profile, _demo):
        window = controller.signed_in(signed, profile)
        window.resize(*SIZE)
        window.show()
        window.show_page("cluster")
        settle(controller.ops)
        window.page("cluster").scene.nodes["kma-dal-1"].setSelected(True)
        paths = [grab(window, args.out / "cluster.png")]
        window.show_page("dashboard")
        settle(controller.ops)
        paths.append(grab(window, tmp / "dashboard.png"))  # to look at; docs keep the full run's
        paths += render_synthetic(args.out, grab)
        for path in paths:
            print(path)
        window.close()
        controller.ops.wait_idle(3000)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
