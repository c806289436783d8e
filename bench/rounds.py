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
    warning = too_wide("kma/pykmip create", ratio)                         # None or a sentence
    return finish(result, [warning] if warning else [])  # the JSON last; exit status 2 if unreliable

- A round function takes no argument and returns one round's figures, a flat dict of numbers
  (e.g. {"ops_per_s": ..., "p99_ms": ...}); every contender must return the same keys.
- `interleave(..., settle=f)` calls `f()` before each round (e.g. wait until the servers' CPU
  is idle, so one contender's background work does not land in the other's round).
- `Spread` is a median with its rounds' min and max, `spread_pct` = (max - min) / median in
  percent, and about a 95% confidence interval of the median (`ci_low`..`ci_high`, width
  `ci_pct` in percent), read off the sorted rounds: no assumption on how rounds are distributed,
  only that they are independent, which interleaving is there to make nearly true.
- `too_wide` flags a Spread (a contender's figure, or a ratio: `Spread.of(values)`) whose
  median is known only within more than `WIDE_PCT`: then
  that median, and any ratio built on it, is not worth quoting. One wild round widens min..max
  but not the confidence interval: that is why the flag looks at the latter.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

Figures = dict[str, float]
Round = Callable[[], Figures]

WIDE_PCT = 40.0  # a median known only within more than this (about +-20%) is not worth quoting


@dataclass(frozen=True)
class Spread:
    """A median over rounds, how far the rounds spread, and how well the median is known."""

    median: float
    min: float
    max: float
    spread_pct: float  # (max - min) / median, in percent
    ci_low: float  # about 95% confidence interval of the median (order statistics, no
    ci_high: float  # assumption on the distribution; rounds taken as independent)
    ci_pct: float  # (ci_high - ci_low) / median, in percent: what `too_wide` judges

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        ordered = sorted(v for v in values if not math.isnan(v))  # a round with no work gives NaN
        if not ordered:
            return cls(*[math.nan] * 7)
        median = statistics.median(ordered)
        k = _ci_rank(len(ordered))
        low, high = ordered[k - 1], ordered[-k]
        return cls(
            _round(median),
            _round(ordered[0]),
            _round(ordered[-1]),
            _pct(ordered[-1] - ordered[0], median),
            _round(low),
            _round(high),
            _pct(high - low, median),
        )

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"{self.median:g} (rounds {self.min:g}..{self.max:g}; "
            f"median within {self.ci_low:g}..{self.ci_high:g}, {self.ci_pct:g}%)"
        )


def _ci_rank(n: int) -> int:
    """The k for which [k-th smallest, k-th largest] of n rounds holds the median with about
    95% confidence (at least 93%: with 5 rounds, min..max holds it 94% of the time)."""
    k = 1
    while k < n // 2 and 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n >= 0.93:
        k += 1
    return k


def _pct(width: float, median: float) -> float:
    if width == 0:
        return 0.0
    return round(width / abs(median) * 100, 1) if median else math.inf


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


def too_wide(label: str, spread: Spread, limit: float = WIDE_PCT) -> str | None:
    """A sentence saying why `label`'s median is not worth quoting, or None when it is."""
    if spread.ci_pct <= limit:
        return None
    return f"{label}: the median is only known within {spread.ci_pct:g}% (> {limit:g}%): {spread}"


def finish(result: dict[str, Any], unreliable: list[str]) -> int:
    """A bench's end: its medians not worth quoting listed (also as the JSON's `unreliable`), the
    JSON object as the last line, and the exit status (2: some median is not worth quoting)."""
    result["unreliable"] = unreliable
    for line in unreliable:
        print(f"UNRELIABLE: {line}", flush=True)
    print(json.dumps(result))
    return 2 if unreliable else 0
