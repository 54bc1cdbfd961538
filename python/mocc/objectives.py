"""Objectives: the weights (throughput, latency, loss) the MOCC reward gives each MI's terms.

An objective is 3 positive weights summing to 1. ``make_vec`` and ``aec_env`` take one of:

- ``None``: the scenario's ``objective`` for every sender;
- 3 weights, or one row of 3 per env (``[num_envs, 3]``): fixed;
- ``"random"``: a fresh objective for every episode, uniform on the simplex
  (:func:`random_objective`);
- ``"landmarks:N"``: a fresh objective for every episode, drawn uniformly from MOCC's
  landmark grid of step 1/N (:func:`landmarks`);
- a callable ``f(rng) -> 3 weights``, called at every episode start with the env's
  ``numpy.random.Generator``.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np

ObjectiveSpec = Union[None, str, Callable[[np.random.Generator], np.ndarray], np.ndarray, list]

#: Weights below this are raised to it, so that every drawn objective is strictly positive.
MIN_WEIGHT = 1e-3


def landmarks(n: int) -> np.ndarray:
    """MOCC's landmark objectives: the strictly positive points of the simplex grid of step
    ``1/n``, ``C(n-1, 2)`` of them (``n = 3`` gives 1, ``n = 10`` gives 36), as ``[k, 3]``."""
    if n < 3:
        raise ValueError(f"landmarks: the grid step 1/n needs n >= 3, got {n}")
    rows = [
        (i / n, j / n, (n - i - j) / n)
        for i in range(1, n - 1)
        for j in range(1, n - i)
    ]
    return np.asarray(rows, dtype=np.float64)


def random_objective(rng: np.random.Generator) -> np.ndarray:
    """An objective drawn uniformly from the simplex (Dirichlet(1, 1, 1)), each weight at
    least ``MIN_WEIGHT``."""
    w = np.maximum(rng.dirichlet(np.ones(3)), MIN_WEIGHT)
    return w / w.sum()


def sampler_of(spec: ObjectiveSpec) -> Optional[Callable[[np.random.Generator], np.ndarray]]:
    """The per-episode sampler a spec names, or ``None`` for a fixed objective."""
    if callable(spec):
        return lambda rng: np.asarray(spec(rng), dtype=np.float64)
    if isinstance(spec, str):
        if spec == "random":
            return random_objective
        if spec.startswith("landmarks:"):
            grid = landmarks(_landmark_steps(spec))
            return lambda rng: grid[rng.integers(len(grid))]
        raise ValueError(
            f'objective: expected "random", "landmarks:N", weights or a callable, got {spec!r}'
        )
    return None


def _landmark_steps(spec: str) -> int:
    text = spec.split(":", 1)[1]
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"objective: {spec!r}: N in landmarks:N must be an integer") from None


def fixed_rows(spec: ObjectiveSpec, rows: int, default: np.ndarray) -> np.ndarray:
    """A fixed spec (``None``, 3 weights or ``[rows, 3]``) as ``[rows, 3]``, checked."""
    if spec is None:
        w = np.tile(np.asarray(default, dtype=np.float64), (rows, 1))
    else:
        w = np.asarray(spec, dtype=np.float64)
        if w.shape == (3,):
            w = np.tile(w, (rows, 1))
        if w.shape != (rows, 3):
            raise ValueError(f"objective: expected 3 weights or shape ({rows}, 3), got {w.shape}")
    check_rows(w)
    return w


def check_rows(w: np.ndarray) -> None:
    """Raises ``ValueError`` naming the first row that is not a valid objective."""
    for i, row in enumerate(w):
        if not np.all(np.isfinite(row)) or np.any(row <= 0) or abs(row.sum() - 1.0) > 1e-6:
            raise ValueError(
                f"objective[{i}]: weights must be positive and sum to 1 (got {row.tolist()})"
            )


class ObjectiveSource:
    """The objectives of a batch's lanes: fixed, or drawn per episode from a seeded RNG."""

    def __init__(self, spec: ObjectiveSpec, lanes: int, default: np.ndarray):
        self.lanes = lanes
        self.sampler = sampler_of(spec)
        self.fixed = None if self.sampler else fixed_rows(spec, lanes, default)
        self.rng = np.random.default_rng()

    def seed(self, seed: Optional[int]) -> None:
        """Reseeds the draws (a no-op for fixed objectives)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def all_rows(self) -> np.ndarray:
        """Every lane's objective for a new episode, ``[lanes, 3]``."""
        if self.fixed is not None:
            return self.fixed.copy()
        return self.draw(self.lanes)

    def draw(self, k: int) -> np.ndarray:
        """``k`` drawn objectives (or fixed rows' first ``k``), checked."""
        if self.fixed is not None:
            return self.fixed[:k].copy()
        w = np.stack([self.sampler(self.rng) for _ in range(k)]).astype(np.float64)
        check_rows(w)
        return w
