"""Cluster page screenshots: one site with one KMA (a demo KMA, signed in as admin), and
synthetic answers no single demo KMA can give (two sites with a KMA down; twenty KMAs).

    python scripts/cluster_screenshots.py [--out docs/screenshots]

``scripts/screenshots.py`` renders the real page with every other page and calls
``render_synthetic`` for the other two.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def render_synthetic(out: Path, grab: Callable[[Any, Path], Path]) -> list[Path]:
    from tests.support.topologies import ShownOnly, twenty_kmas, two_sites_one_down
    from ui.pages.cluster import ClusterPage

    paths = []
    for name, answer, select in (("cluster_two_sites.png", two_sites_one_down(), "kma-bos-2"),
                                 ("cluster_twenty.png", twenty_kmas(), None)):  # fmt: skip
        page = ClusterPage(ShownOnly(frozenset({"security_officer"})))  # type: ignore[arg-type]
        page.resize(1280, 800)
        page.show()
        page.show_topology(answer)
        if select:
            page.scene.nodes[select].setSelected(True)
        paths.append(grab(page, out / name))
        page.close()
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()

    from screenshot_session import offscreen_manager, signed_in_to_demo

    from app.screenshots import SIZE, grab, settle

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
