"""Label-shift estimation on arrays: BBSE, BBSE-QP, RLLS, MLLS with bootstrap intervals."""

import numpy as np
import pytest

import glshift


def probs(n, labels_of_row, accuracy_every=5, c=3):
    """A classifier that is right on 4 rows of 5 (wrong rows go to the next class)."""
    p = np.full((n, c), 0.15, dtype=np.float32)
    for i in range(n):
        y = labels_of_row(i)
        pred = (y + 1) % c if i % accuracy_every == 0 else y
        p[i, pred] = 0.7
    return p


@pytest.fixture(scope="module")
def inputs():
    sl = np.arange(300) % 3
    sp = probs(300, lambda i: i % 3)
    tp = probs(200, lambda i: i % 2)  # the target holds classes 0 and 1 only
    return sp, sl, tp


def test_all_four_estimators_find_the_missing_class(inputs):
    res = glshift.estimate_shift(*inputs)
    assert list(res) == list(glshift.SUITE) == ["bbse", "bbse-qp", "rlls", "mlls"]
    for name, r in res.items():
        assert r.error is None, (name, r.error)
        assert r.prior.shape == (3,) and abs(r.prior.sum() - 1) < 1e-9
        if name != "rlls":  # RLLS shrinks towards the source prior; on 200 rows all the way
            assert r.prior[2] < 0.1 and abs(r.prior[0] - 0.5) < 0.1, (name, r.prior)
        np.testing.assert_allclose(r.weights, r.prior / (1 / 3), rtol=1e-6)
        assert r.ci_low is None and r.ci_high is None
    assert res["bbse"].variant == "bbse-hard" and res["mlls"].variant == "mlls-bcts"
    assert res["mlls"].iterations is not None


def test_bootstrap_intervals_are_seeded_and_ordered(inputs):
    a = glshift.estimate_shift(*inputs, estimators=["bbse-qp", "mlls"], bootstrap=40, seed=3)
    b = glshift.estimate_shift(*inputs, estimators=["bbse-qp", "mlls"], bootstrap=40, seed=3)
    for name in ("bbse-qp", "mlls"):
        r = a[name]
        assert r.interval == "basic" and r.bootstrap_failed == 0
        assert np.all(r.ci_low <= r.ci_high) and np.all(r.ci_low >= 0) and np.all(r.ci_high <= 1)
        np.testing.assert_array_equal(r.ci_low, b[name].ci_low)
    pct = glshift.estimate_shift(
        *inputs, estimators="bbse-qp", bootstrap=40, seed=3, interval="percentile"
    )
    assert pct["bbse-qp"].interval == "percentile"


def test_single_estimator_functions(inputs):
    for fn, variant in [
        (glshift.bbse, "bbse-hard"),
        (glshift.bbse_qp, "bbse-qp-soft"),
        (glshift.rlls, "rlls-hard"),
        (glshift.mlls, "mlls-bcts"),
    ]:
        r = fn(*inputs)
        assert isinstance(r, glshift.ShiftResult) and r.variant == variant
    given = glshift.bbse(*inputs, source_prior=[0.5, 0.25, 0.25])
    np.testing.assert_allclose(given.weights, given.prior / np.array([0.5, 0.25, 0.25]), rtol=1e-6)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"estimators": "nope"}, "unknown estimator"),
        ({"bootstrap": 1}, "at least 2"),
        ({"bootstrap": 10, "level": 1.5}, "level"),
        ({"interval": "wide"}, "interval"),
        ({"source_prior": [0.5, 0.5]}, "source prior"),
        ({"bootstrap": -1}, "bootstrap"),
    ],
)
def test_bad_arguments_raise_value_error(inputs, kw, match):
    with pytest.raises(ValueError, match=match):
        glshift.estimate_shift(*inputs, **kw)


def test_bad_arrays_raise_value_error(inputs):
    sp, sl, tp = inputs
    nan = sp.copy()
    nan[3, 1] = np.nan
    for args in [
        (nan, sl, tp),
        (sp, sl[:-1], tp),
        (sp, sl + 5, tp),
        (sp, sl.astype(float), tp),
        (sp[:, :2], sl % 2, tp),
        (sp[0], sl, tp),
        (sp, -sl, tp),
    ]:
        with pytest.raises(ValueError):
            glshift.estimate_shift(*args)
