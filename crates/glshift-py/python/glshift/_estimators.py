"""scikit-learn / skada estimators over the Rust core (``glshift._core``).

Plumbing only: parameter storage (``get_params``/``set_params``/``clone``), the split of
``X`` into source and target rows by skada's ``sample_domain`` convention, the encoding of
arbitrary class labels to ``0..c-1`` (``classes_``), and pickling through the model file's
bytes. Every check of the data and every computation happens in the core; its errors arrive
as ``ValueError`` (bad input), ``RuntimeError`` (numerical failure) or ``OSError`` (files).
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.metrics import accuracy_score
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core

#: Every method name ``Adapter(method=...)`` accepts (those of ``glshift fit --method``), read
#: from the core's registry of methods, so that no method is missing here.
METHODS = tuple(_core.METHODS)

_DOMAIN_REQUEST = {"sample_domain": True}


def _count_kwarg(name, v):
    """``{name: int(v)}`` for the core, ``{}`` for None; anything but an integer >= 0 is refused."""
    if v is None:
        return {}
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise ValueError(f"{name}: expected an integer >= 0 or None, got {v!r}")
    return {name: int(v)}


def _config_kwargs(config):
    """The core's keyword for ``config``: a dict of settings (as JSON) or a TOML file path."""
    if isinstance(config, dict):
        return {"config_json": json.dumps(config)}
    if isinstance(config, (str, os.PathLike)):
        return {"config_path": os.fspath(config)}
    if config is not None:
        raise TypeError(
            "config: expected None, a dict of settings or a TOML file path, got "
            f"{type(config).__name__}"
        )
    return {}


def _validate(est, X, y=None, reset=False):
    """scikit-learn's input validation (rank, dtype, sparse, empty, n_features_in_, feature
    names, ``y`` given) with the core's dtype: a C-contiguous float32 matrix. Finiteness is
    left to the core, so NaN and infinite values are reported with its message."""
    kw = dict(reset=reset, dtype=np.float32, order="C", ensure_all_finite=False)
    if y is None and not reset:
        return validate_data(est, X, **kw)
    return validate_data(est, X, y, **kw)


def _split_domains(X, y, sample_domain):
    """skada's convention: ``sample_domain > 0`` marks source rows, ``< 0`` target rows (whose
    ``y`` is ``-1``); without ``sample_domain``, rows with ``y == -1`` are the target. Several
    source ids (1, 2, …) are pooled: the source rows are ordered by id (stably), and the ids
    become domain indices 0, 1, … for the hold-out stratified by class and domain
    (docs/multi-source.md). One target id only. Returns the source rows, their encoded labels,
    the target rows, the classes and the source rows' domain indices (``None`` for one source)."""
    source_domains = None
    if sample_domain is None:
        target = (y == -1) if y.dtype.kind in "iuf" else np.zeros(len(y), dtype=bool)
        source = ~target
    else:
        sd = np.asarray(sample_domain)
        if sd.shape != (X.shape[0],) or sd.dtype.kind not in "iu":
            raise ValueError(
                f"sample_domain: expected one integer per row of X ({X.shape[0]}), got shape "
                f"{sd.shape}, dtype {sd.dtype}"
            )
        if np.any(sd == 0):
            raise ValueError("sample_domain: 0 is neither source (> 0) nor target (< 0)")
        source, target = sd > 0, sd < 0
        target_ids = np.unique(sd[target])
        if len(target_ids) > 1:
            raise ValueError(
                f"sample_domain: {len(target_ids)} target domains {target_ids.tolist()}; "
                "glshift adapts its sources to one target domain"
            )
        source_ids = np.unique(sd[source])
        if len(source_ids) > 1:
            order = np.argsort(sd[source], kind="stable")
            rows = np.flatnonzero(source)[order]
            source_domains = np.searchsorted(source_ids, sd[rows]).tolist()
    if not target.any():
        raise ValueError(
            "no target rows: pass sample_domain (< 0 for target rows) or mark target rows "
            "with y = -1"
        )
    if not source.any():
        raise ValueError("no source rows: pass sample_domain (> 0 for labelled source rows)")
    rows = np.flatnonzero(source)
    if source_domains is not None:
        rows = rows[np.argsort(np.asarray(sample_domain)[rows], kind="stable")]
    ys = y[rows]
    if ys.dtype.kind in "iuf" and np.any(ys == -1):
        i = int(rows[np.flatnonzero(ys == -1)[0]])
        raise ValueError(
            f"y: source row {i} has label -1 (skada's mark of an unlabelled row); every "
            "source row needs its label"
        )
    check_classification_targets(ys)
    classes, encoded = np.unique(ys, return_inverse=True)
    return X[rows], encoded.astype(np.int64).reshape(-1), X[target], classes, source_domains


class _GLShiftEstimator(ClassifierMixin, TransformerMixin, BaseEstimator):
    """Shared plumbing of :class:`MUL`, :class:`SourceOnly` and :class:`Adapter`."""

    # scikit-learn metadata routing (what skada's pipelines use): every method accepts
    # ``sample_domain``.
    __metadata_request__fit = _DOMAIN_REQUEST
    __metadata_request__predict = _DOMAIN_REQUEST
    __metadata_request__predict_proba = _DOMAIN_REQUEST
    __metadata_request__score = _DOMAIN_REQUEST
    __metadata_request__transform = _DOMAIN_REQUEST

    # MUL's and SourceOnly's parameters (scikit-learn reads them from this signature).
    def __init__(
        self, *, seed=None, pretrain_iters=None, adapt_iters=None, config=None, device=None
    ):
        self.seed = seed
        self.pretrain_iters = pretrain_iters
        self.adapt_iters = adapt_iters
        self.config = config
        self.device = device

    def _method(self):
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The core computes in float32: transform returns float32 whatever the input dtype.
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags

    def _settings(self):
        kw = {"method": self._method()}
        for name in ("seed", "pretrain_iters", "adapt_iters"):
            kw.update(_count_kwarg(name, getattr(self, name)))
        kw.update(_config_kwargs(self.config))
        if self.device is not None:
            if self.device not in ("cpu", "cuda", "auto"):
                raise ValueError(
                    f"device: expected 'cpu', 'cuda', 'auto' or None, got {self.device!r}"
                )
            kw["device"] = self.device
        return kw

    def resolved_config(self):
        """The settings a fit would use (defaults of ``glshift fit``, then ``config``, then the
        explicit parameters), as a dict."""
        return json.loads(_core.resolved_config(**self._settings()))

    def fit(self, X, y, sample_domain=None):
        """Train on the source rows (with labels) and the unlabelled target rows of ``X``."""
        settings = self._settings()
        X, y = _validate(self, X, y, reset=True)
        Xs, ys, Xt, classes, domains = _split_domains(X, y, sample_domain)
        model, warns = _core.fit(
            Xs, ys, Xt, [str(c) for c in classes], source_domains=domains, **settings
        )
        for w in warns:
            warnings.warn(f"glshift: {w}", UserWarning, stacklevel=2)
        self._set_model(model, classes)
        return self

    def _set_model(self, model, classes):
        info = json.loads(model.info_json())
        self.model_ = model
        self.classes_ = classes
        self.n_features_in_ = model.input_dim
        self.config_ = info["config"]
        self.source_prior_ = np.asarray(model.source_prior)
        tp, iw = model.target_prior, model.importance_weights
        self.target_prior_ = None if tp is None else np.asarray(tp)
        self.importance_weights_ = None if iw is None else np.asarray(iw)
        self.history_ = info["history"]

    def predict(self, X, sample_domain=None):
        """Class labels (from ``classes_``) of every row; ``sample_domain`` is accepted for
        skada's pipelines and not used (every row is predicted by the same network)."""
        check_is_fitted(self, "model_")
        return self.classes_[self.model_.predict(_validate(self, X))]

    def predict_proba(
        self, X, sample_domain=None, adapt_prior=False, bootstrap=200, level=0.9, seed=0
    ):
        """Class probabilities, columns in the order of ``classes_``.

        With ``adapt_prior=True`` the rows are one batch: its class proportions are estimated
        (the fit's label-shift estimator against the source hold-out the model keeps, with a
        ``level`` bootstrap interval of ``bootstrap`` resamples, ``seed``), the probabilities
        are re-weighted to them, and ``batch_prior_`` holds the estimate (``batch_prior``,
        ``batch_prior_ci_low``/``_high``, ``batch_prior_move_l1`` from ``target_prior_`` with
        its p-value, the label-shift residual test, and ``target_shift``: whether the batch is
        a label shift of the target the model was fitted on, a dict with ``p_value``; and
        ``untrusted``, saying what was reported instead, where the fit's prior guard distrusted
        label shift), as ``glshift predict --adapt-prior`` writes it.
        """
        check_is_fitted(self, "model_")
        X = _validate(self, X)
        if not adapt_prior:
            return self.model_.predict_proba(X)
        probs, info = self.model_.predict_proba_adapted(X, int(bootstrap), float(level), int(seed))
        info = json.loads(info)
        self.batch_prior_ = {
            k: (np.asarray(v) if isinstance(v, list) and k != "warnings" else v)
            for k, v in info.items()
        }
        return probs

    def transform(self, X, sample_domain=None):
        """The learned representation Z = G(x) of every row."""
        check_is_fitted(self, "model_")
        return self.model_.transform(_validate(self, X))

    def score(self, X, y, sample_domain=None, sample_weight=None):
        """Accuracy of ``predict(X)`` against ``y`` (evaluation only)."""
        return accuracy_score(y, self.predict(X), sample_weight=sample_weight)

    def save(self, path):
        """Write the model file (the format of ``glshift fit``'s ``model.glshift``)."""
        check_is_fitted(self, "model_")
        self.model_.save(os.fspath(path))

    def __getstate__(self):
        state = super().__getstate__()
        if "model_" in state:
            state = dict(state)
            state["model_"] = bytes(state["model_"].to_bytes())
        return state

    def __setstate__(self, state):
        if isinstance(state.get("model_"), bytes):
            state = dict(state)
            state["model_"] = _core.Model.from_bytes(state["model_"], "<pickle>")
        super().__setstate__(state)


class MUL(_GLShiftEstimator):
    """Minimum Uncertainty Learning (glshift's method), with the defaults of ``glshift fit``.

    Parameters
    ----------
    seed : int or None, default None
        Network initialisation, hold-out split and dropout; None takes the seed of ``config``
        (0 unless set there), like ``glshift fit`` without ``--seed``.
    pretrain_iters, adapt_iters : int or None, default None
        Iterations of the two stages; None takes ``config``'s (or glshift's defaults).
    config : None, dict or path, default None
        Other settings: a TOML file as for ``glshift fit --config``, or a dict with the same
        keys (e.g. ``{"mul": {"lambda_tu": 0.5}}``); unknown keys are errors.
    device : None, "cpu", "cuda" or "auto", default None
        Where the network's products and MUL's kernel sums run, like ``glshift fit
        --device``; None takes ``config``'s (``auto``: CUDA where a driver, cuBLAS, NVRTC and
        a GPU are found, else the CPU). ``cuda`` without a usable GPU is an error.
    """

    def _method(self):
        return "mul"


class SourceOnly(_GLShiftEstimator):
    """No adaptation: MUL's network and schedule trained on the source alone (target rows are
    still required, so that it is a drop-in baseline with the same ``fit`` call)."""

    def _method(self):
        return "source"


class Adapter(_GLShiftEstimator):
    """Any method of ``glshift fit --method`` (see :data:`METHODS`): ``mul``, ``source`` and
    the baselines ``dan``, ``dann``, ``cdan``, ``cdan-e``, ``jan``, ``iw-dann``, ``iw-cdan``,
    ``pada``, ``mmd-classwise``. Other parameters as :class:`MUL`."""

    def __init__(
        self,
        method="mul",
        *,
        seed=None,
        pretrain_iters=None,
        adapt_iters=None,
        config=None,
        device=None,
    ):
        self.method = method
        super().__init__(
            seed=seed,
            pretrain_iters=pretrain_iters,
            adapt_iters=adapt_iters,
            config=config,
            device=device,
        )

    def _method(self):
        if not isinstance(self.method, str):
            raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {self.method!r}")
        return self.method


def _from_model(model, classes):
    """A fitted :class:`MUL`, :class:`SourceOnly` or :class:`Adapter` (by the model's method)
    around a core model, ``config`` set to the model's settings."""
    cfg = json.loads(model.info_json())["config"]
    method = cfg["method"]
    if method == "mul":
        est = MUL(config=cfg)
    elif method == "source":
        est = SourceOnly(config=cfg)
    else:
        est = Adapter(method=method, config=cfg)
    est._set_model(model, classes)
    return est


def load(path):
    """Read a model file (``model.glshift`` of ``glshift fit`` or ``save``) into a fitted
    estimator: :class:`MUL`, :class:`SourceOnly` or :class:`Adapter` by the file's method,
    with ``config`` set to the file's settings and ``classes_`` to its class names (strings)."""
    model = _core.Model.load(os.fspath(path))
    return _from_model(model, np.asarray(model.class_names))
