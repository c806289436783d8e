"""Interleaved rounds: compare two servers (or two commits) on a shared, noisy machine.

A shared machine's speed drifts by tens of percent within minutes, so measuring all of A and then
all of B compares two different machines. Instead every comparison runs several short rounds,
alternating the contenders (A B, B A, A B, ...: the order flips each round so neither always goes
first), with both kept running and warm; each round gives both a figure taken under nearly the
same conditions, and the per-round ratio cancels what drifted. Report the medians and the spread.

The whole interface (a bench needs nothing else):

    per_round = interleave({"kma": run_kma_round, "pykmip": run_pykmip_round}, rounds=7)
    kma = summarise(per_round["kma"])          # {"ops_per_s": median, ..., "spread": {...}}
    ratio = ratio_of(per_round["kma"], per_round["pykmip"], "ops_per_s")   # a Spread
    warning = too_wide("kma create 16", per_round["kma"], "ops_per_s")     # None or a sentence

- A round function takes no argument and returns one round's figures, a flat dict of numbers
  (e.g. {"ops_per_s": ..., "p99_ms": ...}); every contender must return the same keys.
- `interleave(..., settle=f)` calls `f()` before each round (e.g. wait until the servers' CPU
  is idle, so one contender's background work does not land in the other's round).
- `Spread` is a median with its min and max and `spread_pct` = (max - min) / median in percent.
  With 5 rounds, min..max is about a 94% confidence interval of the median (7 rounds: 98%), as
  long as the rounds are independent, which interleaving is there to make nearly true.
- `too_wide` flags a contender whose rounds spread more than `WIDE_PCT`: then its median, and
  any ratio built on it, is not worth quoting.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

Figures = dict[str, float]
Round = Callable[[], Figures]

WIDE_PCT = 50.0  # a contender's rounds spread wider than this: its median means little


@dataclass(frozen=True)
class Spread:
    median: float
    min: float
    max: float
    spread_pct: float  # (max - min) / median, in percent

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        values = [v for v in values if not math.isnan(v)]  # a round with no operation has NaN figures
        if not values:
            return cls(float("nan"), float("nan"), float("nan"), float("nan"))
        median, low, high = statistics.median(values), min(values), max(values)
        wide = 0.0 if high == low else (high - low) / abs(median) * 100 if median else float("inf")
        return cls(_round(median), _round(low), _round(high), round(wide, 1))

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.median:g} ({self.min:g}..{self.max:g}, spread {self.spread_pct:g}%)"


def _round(value: float) -> float:
    """Three significant figures: more would be noise on a shared machine."""
    return float(f"{value:.3g}") if abs(value) < 1000 else round(value)


def interleave(
    contenders: Mapping[str, Round], rounds: int, settle: Callable[[], None] | None = None
) -> dict[str, list[Figures]]:
    """Each contender's figures per round, run A B, B A, A B, ... (`rounds` of each)."""
    names = list(contenders)
    out: dict[str, list[Figures]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            if settle is not None:
                settle()
            out[name].append(contenders[name]())
    return out


def summarise(per_round: Sequence[Figures]) -> dict[str, object]:
    """The median of every figure, plus `spread`: each figure's Spread as a dict, and `rounds`."""
    keys = list(per_round[0])
    spreads = {k: Spread.of([f[k] for f in per_round]) for k in keys}
    summary: dict[str, object] = {k: s.median for k, s in spreads.items()}
    summary["rounds"] = len(per_round)
    summary["spread"] = {k: s.as_dict() for k, s in spreads.items()}
    return summary


def ratio_of(a: Sequence[Figures], b: Sequence[Figures], figure: str) -> Spread:
    """The per-round ratios a/b of one figure (round i of A with round i of B), summarised."""
    return Spread.of([x[figure] / y[figure] for x, y in zip(a, b, strict=True) if y[figure]])


def too_wide(label: str, per_round: Sequence[Figures], figure: str, limit: float = WIDE_PCT) -> str | None:
    """A sentence saying why `label`'s figure is not worth quoting, or None when it is."""
    spread = Spread.of([f[figure] for f in per_round])
    if spread.spread_pct <= limit:
        return None
    return f"{label}: {figure} rounds spread {spread.spread_pct:g}% (> {limit:g}%): {spread}"
