"""Label-shift estimation on arrays: BBSE, BBSE-QP, RLLS and MLLS (with BCTS calibration),
with bootstrap intervals, as ``glshift shift estimate`` runs them on saved probabilities."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from . import _core

#: The four estimators of ``estimators="all"``, in report order.
SUITE = tuple(_core.SUITE)


@dataclass(frozen=True)
class ShiftResult:
    """One estimator's result. ``error`` is set (and the arrays are None) when this estimator
    failed while others of the same call succeeded."""

    name: str
    variant: str
    prior: np.ndarray | None = None
    weights: np.ndarray | None = None
    ci_low: np.ndarray | None = None
    ci_high: np.ndarray | None = None
    interval: str | None = None
    warnings: list = field(default_factory=list)
    iterations: int | None = None
    bootstrap_failed: int | None = None
    bootstrap_error: str | None = None
    error: str | None = None

    @classmethod
    def _from_entry(cls, name, e):
        arr = lambda k: None if e.get(k) is None else np.asarray(e[k], dtype=float)  # noqa: E731
        return cls(
            name=name,
            variant=e["variant"],
            prior=arr("prior"),
            weights=arr("weights"),
            ci_low=arr("prior_ci_low"),
            ci_high=arr("prior_ci_high"),
            interval=e.get("interval"),
            warnings=list(e.get("warnings", [])),
            iterations=e.get("iterations"),
            bootstrap_failed=e.get("bootstrap_failed"),
            bootstrap_error=e.get("bootstrap_error"),
            error=e.get("error"),
        )


def _probs(p, what):
    p = np.asarray(p)
    if p.ndim != 2 or p.dtype.kind not in "biuf":
        raise ValueError(
            f"{what}: expected a 2-D array of class probabilities (rows x classes), got "
            f"shape {p.shape}, dtype {p.dtype}"
        )
    return np.ascontiguousarray(p, dtype=np.float32)


def estimate_shift(
    source_probs,
    source_labels,
    target_probs,
    estimators="all",
    *,
    source_prior=None,
    bootstrap=0,
    level=0.9,
    interval="basic",
    seed=0,
):
    """Estimate the target class prior and the importance weights ``w = p_t / p_s``.

    ``source_probs`` (n_s x c) are a classifier's probabilities on labelled source rows it did
    not train on, ``source_labels`` their class indices in ``0..c-1`` (the columns' order),
    ``target_probs`` (n_t x c) its probabilities on the target rows. ``estimators``: "all"
    (= bbse, bbse-qp, rlls, mlls), one name or a list (variants: bbse-hard, bbse-soft,
    bbse-qp-hard, bbse-qp-soft, rlls-hard, rlls-soft, mlls-bcts). ``source_prior``: the full
    source prior (default: the labels' frequencies). ``bootstrap``: resamples for per-class
    intervals of nominal coverage ``level`` (0 = none), ``interval`` "basic" or "percentile".

    Returns a dict name -> :class:`ShiftResult`. Raises ValueError on bad input and
    RuntimeError when every estimator failed.
    """
    names = [estimators] if isinstance(estimators, str) else list(estimators)
    labels = np.asarray(source_labels)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValueError(
            "source_labels: expected a 1-D array of integer class indices, got shape "
            f"{labels.shape}, dtype {labels.dtype}"
        )
    prior = (
        None
        if source_prior is None
        else [float(v) for v in np.asarray(source_prior, dtype=float).ravel()]
    )
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, (int, np.integer)) or bootstrap < 0:
        raise ValueError(f"bootstrap: expected an integer >= 0, got {bootstrap!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")
    out = _core.estimate_shift(
        _probs(source_probs, "source_probs"),
        np.ascontiguousarray(labels, dtype=np.int64),
        _probs(target_probs, "target_probs"),
        names,
        source_prior=prior,
        bootstrap=int(bootstrap),
        level=float(level),
        interval=str(interval),
        seed=int(seed),
    )
    return {name: ShiftResult._from_entry(name, json.loads(e)) for name, e in out}


def _single(name):
    def run(source_probs, source_labels, target_probs, **kw):
        return estimate_shift(source_probs, source_labels, target_probs, name, **kw)[name]

    run.__name__ = name.replace("-", "_")
    run.__doc__ = (
        f'The `{name}` estimator alone: :func:`estimate_shift` with estimators="{name}"; returns '
        "its ShiftResult."
    )
    return run


bbse = _single("bbse")
bbse_qp = _single("bbse-qp")
rlls = _single("rlls")
mlls = _single("mlls")
