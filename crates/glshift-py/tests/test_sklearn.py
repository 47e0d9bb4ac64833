"""scikit-learn's estimator checks and skada's pipeline.

scikit-learn's checks call ``fit(X, y)`` with labelled rows only, and a domain-adaptation
estimator needs unlabelled target rows: on the plain estimator every check that fits fails
with glshift's "no target rows" ValueError, which is the intended behaviour. They run twice:
on ``MUL`` itself (only the checks that do not fit apply), and on ``Transductive``, a
test-only subclass whose ``fit(X, y)`` passes X once more as the unlabelled target (the
transductive setting), so that every fit-based check exercises the real plumbing (input
validation, dtypes, n_features_in_, pickling, idempotent fits, errors on NaN, ...).
"""

import numpy as np
import pytest
from scipy import sparse
from sklearn.utils.estimator_checks import check_estimator

import glshift

from conftest import FAST

# Checks that apply to MUL as it is: they never call fit.
NO_FIT_CHECKS = {
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_no_attributes_set_in_init",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_estimators_unfitted",
    "check_estimator_tags_renamed",
    "check_valid_tag_types",
    "check_mixin_order",
}

# Checks that do not apply to the transductive wrapper either, and why.
NOT_APPLICABLE = {
    # It trains with the label -1 as a class; -1 is skada's mark of an unlabelled (target)
    # row, so glshift refuses a source row labelled -1.
    "check_classifiers_classes": "-1 is skada's mark of an unlabelled row, not a class label",
}


class Transductive(glshift.MUL):
    """Test-only: fit(X, y) adapts from (X, y) to X itself, so sklearn's checks can fit."""

    def fit(self, X, y, sample_domain=None):
        if sample_domain is None and not sparse.issparse(X) and y is not None:
            X, y = np.asarray(X), np.asarray(y)
            if X.ndim == 2 and len(X) == len(y) and len(X) > 0:
                masked = np.full(y.shape, -1, dtype=object if y.dtype.kind in "OUS" else y.dtype)
                sample_domain = np.concatenate(
                    [np.ones(len(y), dtype=int), -np.ones(len(y), dtype=int)]
                )
                X, y = np.vstack([X, X]), np.concatenate([y, masked])
        return super().fit(X, y, sample_domain=sample_domain)


def run_checks(est):
    results = check_estimator(est, on_fail=None, on_skip=None)
    return {r["check_name"]: r for r in results}


def describe(r):
    return f"{r['check_name']}: {r['status']} {r['exception']!r}"


def _mentions(e, text):
    while e is not None:
        if text in str(e):
            return True
        e = e.__cause__ or e.__context__
    return False


def test_checks_that_do_not_fit_pass_on_mul():
    res = run_checks(glshift.MUL(seed=0, **FAST))
    failed = [
        describe(res[n]) for n in sorted(NO_FIT_CHECKS & set(res)) if res[n]["status"] == "failed"
    ]
    assert not failed, "\n".join(failed)
    assert len(NO_FIT_CHECKS & set(res)) >= 6
    # Every other failure is fit(X, y) without target rows, refused with glshift's message.
    others = [r for r in res.values() if r["status"] == "failed"]
    assert len(others) >= 10
    wrong = [describe(r) for r in others if not _mentions(r["exception"], "no target rows")]
    assert not wrong, "\n".join(wrong)


def test_fit_based_checks_pass_on_the_transductive_wrapper():
    res = run_checks(Transductive(seed=0, **FAST))
    failed = [
        describe(r)
        for n, r in sorted(res.items())
        if r["status"] == "failed" and n not in NOT_APPLICABLE
    ]
    assert not failed, "\n".join(failed)
    passed = [n for n, r in res.items() if r["status"] == "passed"]
    assert len(passed) >= 30, passed


def test_skada_pipeline_fits_two_sources_and_predicts(data):
    skada = pytest.importorskip("skada")
    from sklearn.preprocessing import StandardScaler

    sd = data["sd"].copy()
    src = np.flatnonzero(sd > 0)
    sd[src] = src % 2 + 1
    sd[sd < 0] = -3
    pipe = skada.make_da_pipeline(StandardScaler(), glshift.MUL(seed=0, **FAST))
    pipe.fit(data["X"], data["y_int"], sample_domain=sd)
    Xt = data["X"][sd < 0]
    pred = pipe.predict(Xt, sample_domain=sd[sd < 0])
    assert pred.shape == (len(Xt),) and np.mean(pred == data["yt"]) > 0.6


def test_skada_pipeline_fits_and_predicts(data):
    skada = pytest.importorskip("skada")
    from sklearn.preprocessing import StandardScaler

    pipe = skada.make_da_pipeline(StandardScaler(), glshift.MUL(seed=0, **FAST))
    pipe.fit(data["X"], data["y_int"], sample_domain=data["sd"])
    Xt = data["X"][data["n_source"] :]
    sd_t = data["sd"][data["n_source"] :]
    pred = pipe.predict(Xt, sample_domain=sd_t)
    assert pred.shape == (len(Xt),) and set(pred) <= {0, 1, 2}
    assert pipe.predict_proba(Xt, sample_domain=sd_t).shape == (len(Xt), 3)
    assert np.mean(pred == data["yt"]) > 0.6
    # The pipeline's MUL saw the standardised features: same as scaling by hand.
    mul = (
        pipe[-1].base_estimator_
        if hasattr(pipe[-1], "base_estimator_")
        else pipe[-1].get_estimator()
    )
    assert isinstance(mul, glshift.MUL) and mul.target_prior_ is not None
