"""The per-class conditional two-sample test on arrays (glshift shift test's statistic)."""

import numpy as np
import pytest

import glshift


def samples(shift_class=None, delta=0.0, seed=0, n=120, c=3, dim=4):
    """Two samples of the same three Gaussian classes; optionally class `shift_class` of the
    second moves by `delta` along every feature. Assignments are the true classes."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=4.0, size=(c, dim))
    ya, yb = np.arange(n) % c, np.arange(n) % c
    xa = centers[ya] + rng.normal(size=(n, dim))
    xb = centers[yb] + rng.normal(size=(n, dim))
    if shift_class is not None:
        xb[yb == shift_class] += delta
    return xa, ya, xb, yb


def test_a_shifted_class_is_found_and_the_others_are_not():
    r = glshift.conditional_shift_test(*samples(shift_class=1, delta=2.0), permutations=199, seed=1)
    assert isinstance(r, glshift.ConditionalTest)
    assert (
        r.p_value.shape == (3,)
        and r.n_source.tolist() == [40, 40, 40]
        and r.n_target.tolist() == [40, 40, 40]
    )
    assert r.p_value[1] <= 1 / 200 + 1e-12 and r.reject[1] and r.reject_any
    assert not r.reject[0] and not r.reject[2], r.p_adjusted
    assert np.all(r.p_adjusted >= r.p_value) and r.mcmd2[1] > max(r.mcmd2[0], r.mcmd2[2])
    assert r.permutations == 199 and r.alpha == 0.05 and r.bandwidth > 0 and r.eps > 0


def test_no_shift_rejects_nothing_and_results_are_seeded():
    args = samples(seed=3)
    a = glshift.conditional_shift_test(*args, permutations=99, seed=5)
    b = glshift.conditional_shift_test(*args, permutations=99, seed=5)
    assert not a.reject_any and np.all((a.p_value > 0) & (a.p_value <= 1))
    np.testing.assert_array_equal(a.p_value, b.p_value)
    np.testing.assert_array_equal(a.mcmd2, b.mcmd2)
    fixed = glshift.conditional_shift_test(
        *args, permutations=99, seed=5, bandwidth=a.bandwidth, eps=a.eps
    )
    np.testing.assert_array_equal(fixed.p_value, a.p_value)


def test_a_class_missing_on_one_side_is_not_tested():
    xa, ya, xb, yb = samples()
    keep = yb != 2
    r = glshift.conditional_shift_test(xa, ya, xb[keep], yb[keep], n_classes=3, permutations=49)
    assert (
        r.n_target[2] == 0 and np.isnan(r.p_value[2]) and np.isnan(r.mcmd2[2]) and not r.reject[2]
    )
    assert np.all(np.isfinite(r.p_value[:2]))
    assert r.testable.tolist() == [True, True, False] and r.testable_classes == 2


def test_a_class_below_the_minimum_is_not_testable():
    xa, ya, xb, yb = samples()
    # Keep 4 target rows of class 2 (one fewer than the minimum of 5) and 5 of class 1.
    keep = (
        (yb == 0)
        | ((yb == 1) & (np.cumsum(yb == 1) <= 5))
        | ((yb == 2) & (np.cumsum(yb == 2) <= 4))
    )
    r = glshift.conditional_shift_test(xa, ya, xb[keep], yb[keep], n_classes=3, permutations=49)
    assert r.min_rows_per_class == 5 and r.n_target.tolist() == [40, 5, 4]
    assert (
        r.testable.tolist() == [True, True, False] and np.isnan(r.p_adjusted[2]) and not r.reject[2]
    )


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda a: (a[0], -a[1], a[2], a[3]), "negative"),
        (lambda a: (a[0], a[1][:-1], a[2], a[3]), "assignments"),
        (lambda a: (a[0], a[1], a[2][:, :2], a[3]), "feature dim"),
        (lambda a: (a[0], a[1].astype(float), a[2], a[3]), "y_source"),
        (lambda a: (a[0][0], a[1], a[2], a[3]), "X_source"),
    ],
)
def test_bad_arrays_raise_value_error(change, match):
    with pytest.raises(ValueError, match=match):
        glshift.conditional_shift_test(*change(samples()), permutations=9)


@pytest.mark.parametrize(
    "kw", [{"permutations": 0}, {"alpha": 1.5}, {"bandwidth": -1.0}, {"n_classes": 2}, {"seed": -1}]
)
def test_bad_settings_raise_value_error(kw):
    with pytest.raises(ValueError):
        glshift.conditional_shift_test(*samples(), **kw)
