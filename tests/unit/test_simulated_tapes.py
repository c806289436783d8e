"""`kma agent simulate` on the demo writes its own cartridges, never the demo's (issue 45: its
default volsers overwrote the demo's E tapes)."""

from __future__ import annotations

import re
from pathlib import Path

from kma.agent.simulator import Simulation
from kma.cli import build_parser


def test_the_default_simulated_volsers_are_not_the_demos() -> None:
    args = build_parser().parse_args(["agent", "simulate", "--agent-dir", "drive1"])
    demo = set(re.findall(r'"([A-Z]\d{5})"', (Path(__file__).parents[2] / "kma" / "demo.py").read_text()))
    assert demo  # the demo's cartridges, as it writes them
    first = {
        f"{prefix}{n:05d}" for prefix in (args.prefix, Simulation.prefix) for n in range(1, args.tapes + 1)
    }
    assert not first & demo
