"""Order-free attribution: each move's saving is its Shapley value over the moves.

A plan makes four moves against the baseline (sharing, spot, commitments, schedules). The cost of
any subset of them is well defined (`gpustack.plan.cost`), so the saving of a move is its average
marginal saving over every order in which the moves could be made. No figure depends on an order,
a move that changes nothing gets exactly 0, and the values add up to cost(no move) - cost(all moves).
https://en.wikipedia.org/wiki/Shapley_value
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

Moves = frozenset[str]


def shapley(moves: Sequence[str], cost: Callable[[Moves], float]) -> dict[str, float]:
    """move -> its Shapley value: the saving it brings, averaged over all orders of the moves."""
    n = len(moves)
    levels = {frozenset(c): cost(frozenset(c)) for r in range(n + 1) for c in itertools.combinations(moves, r)}
    values = {}
    for move in moves:
        others = [m for m in moves if m != move]
        total = 0.0
        for r in range(n):
            weight = math.factorial(r) * math.factorial(n - r - 1) / math.factorial(n)
            for rest in itertools.combinations(others, r):
                before = frozenset(rest)
                total += weight * (levels[before] - levels[before | {move}])
        values[move] = total
    return values


def to_cents(values: Sequence[float], total_cents: int) -> list[int]:
    """Round each value to whole cents so that they add up to exactly `total_cents`: every value is
    rounded down, and the cents left over go to the largest remainders (ties: the first)."""
    cents = [v * 100 for v in values]
    floors = [math.floor(c + 1e-9) for c in cents]
    left = total_cents - sum(floors)
    order = sorted(range(len(values)), key=lambda i: (-(cents[i] - floors[i]), i))
    step = 1 if left >= 0 else -1
    for k in range(abs(left)):
        floors[order[k % len(order)] if step > 0 else order[::-1][k % len(order)]] += step
    return floors
