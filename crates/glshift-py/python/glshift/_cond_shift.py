"""The per-class conditional two-sample test of ``glshift shift test`` on arrays: did
``P(x | y = k)`` change between a source and a target sample, class by class?"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from . import _core


@dataclass(frozen=True)
class ConditionalTest:
    """Result of :func:`conditional_shift_test`. Arrays have one entry per class; a class with
    fewer than ``min_rows_per_class`` (5) rows on either side is not testable: ``testable`` is
    False, ``mcmd2``, ``p_value`` and ``p_adjusted`` are NaN, ``reject`` is False, and it is left
    out of Holm's correction. Not testable is not "no shift"."""

    #: The class has at least ``min_rows_per_class`` rows on each side.
    testable: np.ndarray
    mcmd2: np.ndarray
    p_value: np.ndarray
    #: Holm-adjusted across the tested classes.
    p_adjusted: np.ndarray
    reject: np.ndarray
    n_source: np.ndarray
    n_target: np.ndarray
    #: Some class's adjusted p-value is below ``alpha``.
    reject_any: bool
    #: Number of testable classes (0: nothing was tested, whatever ``reject_any`` says).
    testable_classes: int
    min_rows_per_class: int
    alpha: float
    permutations: int
    bandwidth: float
    eps: float


def _rows(x, what):
    x = np.asarray(x)
    if x.ndim != 2 or x.dtype.kind not in "biuf":
        raise ValueError(
            f"{what}: expected a 2-D numeric array (rows x features), got shape {x.shape}, "
            f"dtype {x.dtype}"
        )
    return np.ascontiguousarray(x, dtype=np.float32)


def _assignments(y, what):
    y = np.asarray(y)
    if y.ndim != 1 or y.dtype.kind not in "iu":
        raise ValueError(
            f"{what}: expected a 1-D array of integer class indices, got shape {y.shape}, "
            f"dtype {y.dtype}"
        )
    return np.ascontiguousarray(y, dtype=np.int64)


def _count(v, what, low):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise ValueError(f"{what}: expected an integer >= {low}, got {v!r}")
    return int(v)


def conditional_shift_test(
    X_source,
    y_source,
    X_target,
    y_target,
    *,
    n_classes=None,
    permutations=999,
    seed=0,
    alpha=0.05,
    eps=None,
    bandwidth=None,
):
    """Per class k, MCMD² between the source rows assigned to k and the target rows assigned to
    k, a permutation p-value and Holm's correction across classes (docs/shift-test.md).

    ``X_source`` (n_s x d) and ``X_target`` (n_t x d) are the rows to compare (e.g. features
    preprocessed with source statistics), ``y_source`` / ``y_target`` their class assignments in
    ``0..n_classes-1``. For a valid test both must come from one rule that does not depend on
    the sample, e.g. one classifier's predictions on a source hold-out and on the target.
    ``n_classes`` defaults to 1 + the largest assignment; ``eps`` to the fit's default ε for
    ``n_classes``; ``bandwidth`` h (kernel ``exp(-|x - x'|² / h)``) to the mean pairwise squared
    distance of the pooled rows. Seeded: the same arguments give the same p-values.

    Returns a :class:`ConditionalTest`. Raises ValueError on bad input.
    """
    xa, xb = _rows(X_source, "X_source"), _rows(X_target, "X_target")
    ya, yb = _assignments(y_source, "y_source"), _assignments(y_target, "y_target")
    if n_classes is None:
        n_classes = 1 + int(max(ya.max(initial=-1), yb.max(initial=-1)))
    n_classes = _count(n_classes, "n_classes", 1)
    out = json.loads(
        _core.conditional_shift_test(
            xa,
            ya,
            xb,
            yb,
            n_classes,
            _count(permutations, "permutations", 1),
            _count(seed, "seed", 0),
            float(alpha),
            eps=None if eps is None else float(eps),
            bandwidth=None if bandwidth is None else float(bandwidth),
        )
    )
    per = out["per_class"]
    col = lambda k: np.array([np.nan if p[k] is None else p[k] for p in per], dtype=float)  # noqa: E731
    return ConditionalTest(
        testable=np.array([p["testable"] for p in per], dtype=bool),
        mcmd2=col("mcmd2"),
        p_value=col("p_value"),
        p_adjusted=col("p_adjusted"),
        reject=np.array([p["reject"] for p in per], dtype=bool),
        n_source=np.array([p["n_source"] for p in per], dtype=int),
        n_target=np.array([p["n_target"] for p in per], dtype=int),
        reject_any=bool(out["reject_any"]),
        testable_classes=int(out["testable_classes"]),
        min_rows_per_class=int(out["min_rows_per_class"]),
        alpha=float(out["alpha"]),
        permutations=int(out["permutations"]),
        bandwidth=float(out["bandwidth"]),
        eps=float(out["eps"]),
    )
