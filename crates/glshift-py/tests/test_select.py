"""glshift.select on arrays: the choice, every candidate's scores, the chosen fitted model
(the same model a plain fit of its configuration gives), label-freeness and errors."""

import numpy as np
import pytest

import glshift

from conftest import FAST

SCORERS = {"iwcv", "dev", "dev_normalised", "snd", "neg_entropy", "circular"}


@pytest.fixture(scope="module")
def selected(data):
    return glshift.select(
        data["X"], data["y_int"], sample_domain=data["sd"], seed=0, config=dict(FAST)
    )


def test_default_candidates_are_scored_and_one_is_chosen(selected):
    names = [c["name"] for c in selected.candidates]
    assert names == ["source", "mul", "mul-weak"]
    assert selected.chosen_name == names[selected.chosen]
    assert selected.rule in glshift.RULES
    assert selected.chosen_name in selected.reason
    for c in selected.candidates:
        assert set(c["scores"]) == SCORERS
        assert all(v is None or np.isfinite(v) for v in c["scores"].values())
    assert selected.scores["mul"] == selected.candidates[1]["scores"]
    w = selected.iwcv_reference["weights"]
    assert len(w) == 3 and all(x >= 0 for x in w)


def test_the_chosen_model_is_a_plain_fit_of_its_configuration(data, selected):
    cfg = selected.candidates[selected.chosen]["config"]
    est = selected.estimator
    assert est.config_ == cfg
    plain = glshift.Adapter(method=cfg["method"], config=cfg).fit(
        data["X"], data["y_int"], sample_domain=data["sd"]
    )
    np.testing.assert_array_equal(est.predict_proba(data["X"]), plain.predict_proba(data["X"]))
    np.testing.assert_array_equal(est.classes_, plain.classes_)


def test_target_rows_labels_are_never_read(data, selected):
    y = data["y_int"].copy()
    tgt = data["sd"] < 0
    y[tgt] = np.random.default_rng(1).integers(
        0, 3, size=tgt.sum()
    )  # labels that sample_domain says to ignore
    again = glshift.select(data["X"], y, sample_domain=data["sd"], seed=0, config=dict(FAST))
    assert [c["scores"] for c in again.candidates] == [c["scores"] for c in selected.candidates]
    assert again.chosen == selected.chosen


def test_candidates_and_rule_from_python(data):
    cands = [
        {"name": "pre", "method": "source", "adapt_iters": 0},
        {"method": "mul", "lambda_tu": 0.3},
    ]
    s = glshift.select(
        data["X"],
        data["y"],
        sample_domain=data["sd"],
        candidates=cands,
        rule="iwcv",
        seed=0,
        config=dict(FAST),
    )
    assert [c["name"] for c in s.candidates] == ["pre", "mul[lambda_tu=0.3]"]
    assert s.rule == "iwcv"
    iwcv = [c["scores"]["iwcv"] for c in s.candidates]
    assert s.chosen == int(np.argmax(iwcv))
    assert s.candidates[1]["config"]["mul"]["lambda_tu"] == 0.3
    assert s.estimator.classes_.tolist() == ["cat", "dog", "eel"]
    assert set(s.estimator.predict(data["X"])) <= {"cat", "dog", "eel"}


@pytest.mark.parametrize(
    "kw, exc, msg",
    [
        ({"rule": "best"}, ValueError, "mean-rank"),
        ({"rule": 3}, ValueError, "rule"),
        ({"candidates": [{"method": "mul", "lambda": 1.0}]}, ValueError, "unknown field"),
        ({"candidates": [{"lambda_tu": 1.0}]}, ValueError, "method"),
        ({"candidates": []}, ValueError, "no candidate"),
        ({"candidates": [{"method": "mul"}, {"method": "mul"}]}, ValueError, "repeats a name"),
        ({"candidates": [{"method": "mul", "tau": 1.5}]}, ValueError, "mul.tau"),
        ({"candidates": {"method": "mul"}}, TypeError, "list of dicts"),
        ({"candidates": ["mul"]}, TypeError, "candidates[0]"),
        ({"seed": -1}, ValueError, "seed"),
        ({"config": 3}, TypeError, "config"),
    ],
)
def test_bad_arguments_are_python_errors(data, kw, exc, msg):
    with pytest.raises(exc, match=None) as e:
        glshift.select(
            data["X"], data["y_int"], sample_domain=data["sd"], **{"config": dict(FAST), **kw}
        )
    assert msg in str(e.value), str(e.value)


def test_several_sources_are_pooled_and_the_chosen_model_is_their_pooled_fit(data):
    sd = data["sd"].copy()
    src = np.flatnonzero(sd > 0)
    sd[src] = src % 2 + 1
    sd[sd < 0] = -3
    s = glshift.select(data["X"], data["y_int"], sample_domain=sd, seed=0, config=dict(FAST))
    cfg = s.candidates[s.chosen]["config"]
    plain = glshift.Adapter(method=cfg["method"], config=cfg).fit(
        data["X"], data["y_int"], sample_domain=sd
    )
    np.testing.assert_array_equal(
        s.estimator.predict_proba(data["X"]), plain.predict_proba(data["X"])
    )
    assert [c["name"] for c in s.candidates] == ["source", "mul", "mul-weak"]
