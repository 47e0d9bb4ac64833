"""``glshift.select``: model selection without target labels on arrays (``glshift select`` of
the CLI; docs/select.md). Plumbing only: the rows are split and the labels encoded as for the
estimators' ``fit``, the core fits and scores the candidates and returns the choice."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field

from . import _core
from ._estimators import (
    MUL,
    _config_kwargs,
    _count_kwarg,
    _from_model,
    _GLShiftEstimator,
    _split_domains,
    _validate,
)

#: The selection rules (``rule=``), as ``glshift select --scorer``.
RULES = tuple(_core.RULES)


@dataclass
class Selection:
    """What :func:`select` returns.

    Attributes
    ----------
    chosen_name : str
        The chosen candidate's name.
    chosen : int
        Its index in ``candidates``.
    estimator : MUL, SourceOnly or Adapter
        The chosen candidate's fitted model (as :func:`glshift.load` returns one): ``predict``,
        ``predict_proba``, ``transform``, ``save``, ``target_prior_`` ...
    rule : str
        The rule that chose.
    reason : str
        One sentence: the rule, the winner's value and the runner-up's.
    candidates : list of dict
        Every candidate as scored: ``name``, ``candidate`` (as given), ``config`` (its full
        settings), ``scores`` (``iwcv``, ``dev``, ``dev_normalised``, ``snd``, ``neg_entropy``,
        ``circular``; higher is better, ``None`` where a scorer failed), ``rule_value``,
        ``adapt_iterations``, ``estimated_target_prior``, ``diagnostics``, ``warnings``.
    iwcv_reference : dict
        The class weights every candidate's IWCV used (``target_prior``, ``weights``, ``from``).
    """

    chosen_name: str
    chosen: int
    estimator: _GLShiftEstimator
    rule: str
    reason: str
    candidates: list = field(repr=False)
    iwcv_reference: dict = field(repr=False)

    @property
    def scores(self):
        """``{candidate name: its scores dict}``."""
        return {c["name"]: c["scores"] for c in self.candidates}


def _candidates_json(candidates):
    if candidates is None:
        return None
    if isinstance(candidates, dict) or not hasattr(candidates, "__iter__"):
        raise TypeError(
            "candidates: expected a list of dicts such as {'method': 'mul', 'lambda_tu': 0.3}"
        )
    cands = list(candidates)
    for i, c in enumerate(cands):
        if not isinstance(c, dict):
            raise TypeError(
                f"candidates[{i}]: expected a dict with at least 'method', got {type(c).__name__}"
            )
    return json.dumps(cands)


def select(X, y, sample_domain=None, *, candidates=None, rule=None, seed=None, config=None):
    """Fit every candidate on the source rows of ``X`` (labels ``y``) and its unlabelled
    target rows (one shared pre-training), score each without target labels, and keep the one
    the rule chooses.

    Parameters
    ----------
    X, y, sample_domain
        As for :meth:`MUL.fit`: ``sample_domain > 0`` marks source rows, ``< 0`` target rows
        (their ``y`` is ``-1`` and never read); without it, rows with ``y == -1`` are the target.
        Several source ids are pooled as :meth:`MUL.fit` pools them, each candidate the pooled
        fit.
    candidates : list of dict or None
        Each a ``[[candidate]]`` table of docs/select.md as a dict: ``method`` (required),
        ``name``, ``lambda_tu``, ``lambda_du``, ``tau``, ``adapt_iters``. None: the default set
        (``source``, ``mul``, ``mul-weak``).
    rule : str or None
        One of :data:`RULES`; None: ``glshift select``'s default.
    seed, config
        The base every candidate starts from, as for :class:`MUL` (``config`` a dict or a TOML
        file path).

    Returns
    -------
    Selection
    """
    kw = {"candidates_json": _candidates_json(candidates)}
    if rule is not None:
        if not isinstance(rule, str):
            raise ValueError(f"rule: expected one of {', '.join(RULES)}, got {rule!r}")
        kw["rule"] = rule
    kw.update(_count_kwarg("seed", seed))
    kw.update(_config_kwargs(config))
    # The estimators' validation (rank, dtype float32, sparse, empty) on a throwaway instance.
    X, y = _validate(MUL(), X, y, reset=True)
    Xs, ys, Xt, classes, domains = _split_domains(X, y, sample_domain)
    sel_json, model, warns = _core.select(
        Xs, ys, Xt, [str(c) for c in classes], source_domains=domains, **kw
    )
    for w in warns:
        warnings.warn(f"glshift: {w}", UserWarning, stacklevel=2)
    sel = json.loads(sel_json)
    return Selection(
        chosen_name=sel["chosen_name"],
        chosen=sel["chosen"],
        estimator=_from_model(model, classes),
        rule=sel["rule"],
        reason=sel["reason"],
        candidates=sel["candidates"],
        iwcv_reference=sel["iwcv_reference"],
    )
