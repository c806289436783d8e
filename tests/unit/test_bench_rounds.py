"""The comparing benches' method (bench/rounds.py): interleaving, medians, spreads and the flag.

No timing here: the round functions return made-up figures, as a bench's would."""

from __future__ import annotations

import itertools
from pathlib import Path

from bench.rounds import Spread, interleave, ratio_of, summarise, too_wide
from tests.support.kma_process import run_kma


def test_rounds_alternate_which_contender_goes_first() -> None:
    order: list[str] = []

    def contender(name: str):  # noqa: ANN202
        return lambda: order.append(name) or {"ops_per_s": 1.0}

    per_round = interleave({"a": contender("a"), "b": contender("b")}, rounds=4)

    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert [len(per_round["a"]), len(per_round["b"])] == [4, 4]


def test_settle_runs_before_every_round() -> None:
    events: list[str] = []
    interleave(
        {"a": lambda: events.append("a") or {"x": 1.0}, "b": lambda: events.append("b") or {"x": 1.0}},
        rounds=2,
        settle=lambda: events.append("settle"),
    )
    assert events == ["settle", "a", "settle", "b", "settle", "b", "settle", "a"]


def test_ratio_is_the_median_of_per_round_ratios_so_a_drifting_machine_cancels_out() -> None:
    # Given a machine that slows down by half during the run, A always twice as fast as B
    speed = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.5]
    a = [{"ops_per_s": 200 * s} for s in speed]
    b = [{"ops_per_s": 100 * s} for s in speed]

    ratio = ratio_of(a, b, "ops_per_s")

    assert (ratio.median, ratio.min, ratio.max, ratio.spread_pct) == (2.0, 2.0, 2.0, 0.0)
    assert too_wide("a / b", ratio) is None
    assert Spread.of([f["ops_per_s"] for f in a]).spread_pct == 71.4  # while each server's rounds spread


def test_one_wild_round_widens_the_range_but_not_the_confidence_interval() -> None:
    rounds = [100.0 + i for i in range(24)] + [400.0]

    spread = Spread.of(rounds)

    assert (spread.median, spread.min, spread.max) == (112.0, 100.0, 400.0)
    assert spread.spread_pct > 250
    assert (spread.ci_low, spread.ci_high) == (107.0, 117.0)  # the 8th smallest and 8th largest of 25
    assert too_wide("kma get 16", spread) is None


def test_with_five_rounds_the_confidence_interval_is_min_to_max() -> None:
    spread = Spread.of([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (spread.ci_low, spread.median, spread.ci_high) == (1.0, 3.0, 5.0)


def test_a_median_known_only_roughly_is_flagged_with_its_figures() -> None:
    spread = Spread.of([50.0, 100.0, 150.0, 60.0, 140.0])

    warning = too_wide("pykmip get 16 agents", spread)

    assert warning is not None
    assert "pykmip get 16 agents" in warning and "100%" in warning and "50..150" in warning


def test_summary_holds_medians_and_each_figures_spread() -> None:
    values = itertools.count(1)
    per_round = [{"ops_per_s": float(next(values)), "p99_ms": 5.0} for _ in range(3)]

    summary = summarise(per_round)

    assert summary["ops_per_s"] == 2.0 and summary["p99_ms"] == 5.0 and summary["rounds"] == 3
    assert summary["spread"]["ops_per_s"]["min"] == 1.0  # type: ignore[index]
    assert summary["spread"]["p99_ms"]["spread_pct"] == 0.0  # type: ignore[index]


def test_rounds_that_did_no_work_do_not_count() -> None:
    assert Spread.of([float("nan"), 4.0, 6.0]).median == 5.0


def test_a_baseline_checkout_runs_its_own_kma(tmp_path: Path) -> None:
    # Given another checkout (a baseline commit) whose kma says who it is
    (tmp_path / "kma").mkdir()
    (tmp_path / "kma" / "__main__.py").write_text("print('the baseline kma')\n")

    ran = run_kma("--version", source=tmp_path)

    assert ran.stdout.strip() == "the baseline kma"
