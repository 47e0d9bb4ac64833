"""The estimators: scikit-learn conventions, skada's domain convention, save/load, pickling,
errors as Python exceptions, determinism, GIL release and Ctrl-C."""

import _thread
import pickle
import signal
import threading
import time

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import glshift

from conftest import FAST, blobs


def test_fit_sets_fitted_attributes(data, fitted):
    c = 3
    assert fitted.classes_.tolist() == [0, 1, 2]
    assert fitted.n_features_in_ == data["X"].shape[1]
    assert fitted.target_prior_.shape == (c,)
    assert abs(fitted.target_prior_.sum() - 1.0) < 1e-9
    assert fitted.importance_weights_.shape == (c,)
    assert np.all(fitted.importance_weights_ >= 0)
    assert abs(fitted.source_prior_.sum() - 1.0) < 1e-9
    stages = {r["stage"] for r in fitted.history_}
    assert len(fitted.history_) >= FAST["adapt_iters"] and stages <= {"pretrain", "adapt"}
    assert fitted.config_["method"] == "mul" and fitted.config_["seed"] == 0
    assert fitted.config_["adapt_iters"] == FAST["adapt_iters"]


def test_predict_proba_adapted_to_a_batch(data, fitted):
    X = data["X"][data["n_source"] :]
    p = fitted.predict_proba(X, adapt_prior=True, bootstrap=50, seed=1)
    assert p.shape == (len(X), 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    b = fitted.batch_prior_
    # The fit's own target: the same estimate as the model's, nothing moved.
    np.testing.assert_array_equal(b["batch_prior"], fitted.target_prior_)
    assert b["batch_prior_move_l1"] == 0.0 and b["resamples"] == 50
    assert np.all(b["batch_prior_ci_low"] <= b["batch_prior"]) and np.all(
        b["batch_prior"] <= b["batch_prior_ci_high"]
    )
    assert 0.0 < b["label_shift_p_value"] <= 1.0
    # The target test on the fit's own target rows: made, no alarm.
    assert b["target_shift"]["p_value"] > 0.05 and b["target_shift"]["batch_rows"] >= 10
    again = fitted.predict_proba(X, adapt_prior=True, bootstrap=50, seed=1)
    np.testing.assert_array_equal(p, again)
    # Without the flag, predict_proba is unchanged.
    np.testing.assert_array_equal(
        fitted.predict_proba(X), fitted.model_.predict_proba(X.astype(np.float32))
    )
    with pytest.raises(ValueError, match="resamples"):
        fitted.predict_proba(X, adapt_prior=True, bootstrap=1)


def test_predict_proba_transform_score(data, fitted):
    X = data["X"][data["n_source"] :]
    p = fitted.predict_proba(X)
    assert p.shape == (len(X), 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    pred = fitted.predict(X)
    np.testing.assert_array_equal(pred, fitted.classes_[p.argmax(axis=1)])
    z = fitted.transform(X)
    assert z.ndim == 2 and z.shape[0] == len(X)
    acc = fitted.score(X, data["yt"])
    assert acc == np.mean(pred == data["yt"])
    # Well separated blobs: far better than chance even with few iterations.
    assert acc > 0.6


def test_string_labels_are_sorted_into_classes_and_match_integer_labels(data, fitted):
    est = glshift.MUL(seed=0, **FAST).fit(data["X"], data["y"], sample_domain=data["sd"])
    assert est.classes_.tolist() == ["cat", "dog", "eel"]
    X = data["X"]
    np.testing.assert_array_equal(est.predict_proba(X), fitted.predict_proba(X))
    np.testing.assert_array_equal(
        est.predict(X), np.asarray(["cat", "dog", "eel"])[fitted.predict(X)]
    )


def test_arbitrary_integer_labels_map_through_sorted_unique(data, fitted):
    relabel = np.array([10, -7, 3])  # class 0 -> 10, 1 -> -7, 2 -> 3; sorted: -7, 3, 10
    y = data["y_int"].copy()
    src = data["sd"] > 0
    y[src] = relabel[y[src]]
    est = glshift.MUL(seed=0, **FAST).fit(data["X"], y, sample_domain=data["sd"])
    assert est.classes_.tolist() == [-7, 3, 10]
    # Columns follow classes_: the network sees class indices in the sorted order.
    assert set(est.predict(data["X"])) <= {-7, 3, 10}


def test_without_sample_domain_rows_labelled_minus_one_are_the_target(data, fitted):
    est = glshift.MUL(seed=0, **FAST).fit(data["X"], data["y_int"])
    np.testing.assert_array_equal(est.predict_proba(data["X"]), fitted.predict_proba(data["X"]))


def test_fit_is_deterministic_for_a_seed_and_the_seed_matters(data, fitted):
    again = glshift.MUL(seed=0, **FAST).fit(data["X"], data["y_int"], sample_domain=data["sd"])
    np.testing.assert_array_equal(again.predict_proba(data["X"]), fitted.predict_proba(data["X"]))
    other = glshift.MUL(seed=1, **FAST).fit(data["X"], data["y_int"], sample_domain=data["sd"])
    assert not np.array_equal(other.predict_proba(data["X"]), fitted.predict_proba(data["X"]))


def test_get_set_params_clone_and_repr():
    est = glshift.MUL(seed=3, adapt_iters=7, config={"mul": {"tau": 0.8}})
    params = est.get_params()
    assert params == {
        "seed": 3,
        "pretrain_iters": None,
        "adapt_iters": 7,
        "config": {"mul": {"tau": 0.8}},
        "device": None,
    }
    c = clone(est)
    assert c is not est and c.get_params() == params
    assert c.set_params(seed=5) is c and c.seed == 5 and est.seed == 3
    assert repr(glshift.MUL(seed=0)) == "MUL(seed=0)"
    assert repr(glshift.Adapter(method="dann")) == "Adapter(method='dann')"
    assert glshift.Adapter().get_params()["method"] == "mul"
    # clone of a fitted estimator is unfitted
    with pytest.raises(NotFittedError):
        clone(glshift.SourceOnly(**FAST)).predict(np.zeros((1, 5)))


def test_resolved_config_follows_defaults_then_config_then_parameters(tmp_path):
    default = glshift.MUL().resolved_config()
    assert default["method"] == "mul" and default["seed"] == 0
    toml = tmp_path / "c.toml"
    toml.write_text("seed = 4\nadapt_iters = 9\n[mul]\ntau = 0.7\n")
    from_file = glshift.MUL(config=toml).resolved_config()
    assert (from_file["seed"], from_file["adapt_iters"], from_file["mul"]["tau"]) == (4, 9, 0.7)
    assert from_file["pretrain_iters"] == default["pretrain_iters"]
    from_dict = glshift.MUL(
        config={"seed": 4, "adapt_iters": 9, "mul": {"tau": 0.7}}
    ).resolved_config()
    assert from_dict == from_file
    over = glshift.MUL(config=toml, seed=1, adapt_iters=2).resolved_config()
    assert (over["seed"], over["adapt_iters"]) == (1, 2)
    assert glshift.SourceOnly().resolved_config()["method"] == "source"


def test_device_parameter_sets_the_config_and_cpu_gives_the_same_model(data, fitted):
    assert glshift.MUL().resolved_config()["device"] == "auto"
    assert (
        glshift.MUL(device="cuda", config={"device": "cpu"}).resolved_config()["device"] == "cuda"
    )
    assert glshift.MUL(config={"device": "cpu"}).resolved_config()["device"] == "cpu"
    with pytest.raises(ValueError, match="device"):
        glshift.MUL(device="tpu").resolved_config()
    # Explicitly on the CPU: the same model as the fixture's (fitted with `auto`, which is the
    # CPU on a machine without a usable GPU, as in CI).
    cpu = glshift.MUL(device="cpu", seed=0, **FAST).fit(
        data["X"], data["y_int"], sample_domain=data["sd"]
    )
    if fitted.config_["device"] == "auto" and not _gpu_usable():
        np.testing.assert_array_equal(cpu.predict_proba(data["X"]), fitted.predict_proba(data["X"]))


def _gpu_usable():
    try:
        glshift.MUL(device="cuda", pretrain_iters=2, adapt_iters=1).fit(
            *blobs()[:2], sample_domain=blobs()[2]
        )
        return True
    except Exception as e:  # noqa: BLE001 - the message is checked below
        assert "device cuda" in str(e), e
        return False


def test_cuda_without_a_usable_gpu_is_one_clear_error():
    if _gpu_usable():
        pytest.skip("a usable CUDA GPU is present")
    with pytest.raises(Exception, match="device cuda: "):
        glshift.MUL(device="cuda", **FAST).fit(*blobs()[:2], sample_domain=blobs()[2])


def test_pickle_round_trip_keeps_predictions(data, fitted):
    back = pickle.loads(pickle.dumps(fitted))
    assert type(back) is glshift.MUL and back.get_params() == fitted.get_params()
    np.testing.assert_array_equal(back.predict_proba(data["X"]), fitted.predict_proba(data["X"]))
    np.testing.assert_array_equal(back.classes_, fitted.classes_)
    np.testing.assert_array_equal(back.target_prior_, fitted.target_prior_)


def test_save_and_load_the_model_file(tmp_path, data, fitted):
    path = tmp_path / "model.glshift"
    fitted.save(path)
    back = glshift.load(path)
    assert type(back) is glshift.MUL
    assert back.classes_.tolist() == ["0", "1", "2"]  # the file keeps class names
    np.testing.assert_array_equal(back.predict_proba(data["X"]), fitted.predict_proba(data["X"]))
    np.testing.assert_array_equal(back.importance_weights_, fitted.importance_weights_)
    assert back.config_ == fitted.config_ and back.history_ == fitted.history_
    # Refitting the loaded estimator with its settings gives the same model.
    refit = clone(back).fit(data["X"], data["y_int"], sample_domain=data["sd"])
    np.testing.assert_array_equal(refit.predict_proba(data["X"]), fitted.predict_proba(data["X"]))


def test_source_only_and_a_baseline(data):
    src = glshift.SourceOnly(seed=0, **FAST).fit(data["X"], data["y_int"], sample_domain=data["sd"])
    assert src.config_["method"] == "source"
    assert src.predict(data["X"]).shape == (len(data["X"]),)
    dann = glshift.Adapter("dann", seed=0, **FAST).fit(
        data["X"], data["y_int"], sample_domain=data["sd"]
    )
    assert dann.config_["method"] == "dann"
    assert dann.predict_proba(data["X"]).shape == (len(data["X"]), 3)


def _fit(est, X, y, sd):
    return est.fit(X, y, sample_domain=sd)


@pytest.mark.parametrize(
    "mutate, exc, match",
    [
        (
            lambda X, y, sd: (np.where(np.arange(X.size).reshape(X.shape) == 7, np.nan, X), y, sd),
            ValueError,
            "(?i)nan|finite",
        ),
        (lambda X, y, sd: (X[:, 0], y, sd), ValueError, "Expected 2D array"),
        (
            lambda X, y, sd: (X.astype(str).astype(object) + "x", y, sd),
            ValueError,
            "(?i)convert|numeric",
        ),
        (lambda X, y, sd: (X, np.where(sd > 0, 0, -1), sd), ValueError, "at least 2"),
        (lambda X, y, sd: (X, y, np.ones_like(sd)), ValueError, "no target rows"),
        (lambda X, y, sd: (X, y, -np.ones_like(sd)), ValueError, "no source rows"),
        (lambda X, y, sd: (X, y[:-1], sd), ValueError, "inconsistent numbers of samples"),
        (lambda X, y, sd: (X, y, sd[:-1]), ValueError, "sample_domain"),
        (
            lambda X, y, sd: (X, y, np.where(sd < 0, -(np.arange(len(sd)) % 2) - 1, sd)),
            ValueError,
            "one target domain",
        ),
        (
            lambda X, y, sd: (X, np.where(np.arange(len(y)) == 0, -1, y), sd),
            ValueError,
            "source row 0 has label -1",
        ),
        (
            lambda X, y, sd: (X, np.where(sd > 0, np.linspace(0, 1, len(y)), -1), sd),
            ValueError,
            "Unknown label type",
        ),
        (lambda X, y, sd: (X, None, sd), ValueError, "requires y"),
        (lambda X, y, sd: (X[:, :0], y, sd), ValueError, "0 feature"),
    ],
)
def test_bad_data_raises_value_error(data, mutate, exc, match):
    X, y, sd = mutate(data["X"], data["y_int"], data["sd"])
    with pytest.raises(exc, match=match):
        _fit(glshift.MUL(seed=0, **FAST), X, y, sd)


@pytest.mark.parametrize(
    "est, match",
    [
        (glshift.Adapter("nope"), "unknown method"),
        (glshift.MUL(config={"mul": {"no_such_key": 1}}), "invalid settings"),
        (glshift.MUL(config={"mul": {"tau": 2.0}}), "mul.tau"),
        (glshift.MUL(seed=-1), "seed"),
        (glshift.MUL(adapt_iters=0), "adapt_iters"),
        (glshift.MUL(adapt_iters=1.5), "adapt_iters"),
    ],
)
def test_bad_parameters_raise_value_error(data, est, match):
    with pytest.raises(ValueError, match=match):
        _fit(est, data["X"], data["y_int"], data["sd"])


def test_missing_config_file_is_os_error(data):
    with pytest.raises(OSError, match="no-such.toml"):
        _fit(glshift.MUL(config="no-such.toml"), data["X"], data["y_int"], data["sd"])


def test_predict_errors(data, fitted, tmp_path):
    with pytest.raises(NotFittedError):
        glshift.MUL().predict(data["X"])
    with pytest.raises(ValueError, match="X has 3 features, but MUL is expecting 5"):
        fitted.predict(data["X"][:, :3])
    bad = data["X"][:4].copy()
    bad[1, 2] = np.inf
    with pytest.raises(ValueError, match="(?i)inf|finite"):
        fitted.predict_proba(bad)
    with pytest.raises(OSError):
        glshift.load(tmp_path / "missing.glshift")
    junk = tmp_path / "junk.glshift"
    junk.write_bytes(b"not a model file at all")
    with pytest.raises(ValueError, match="junk.glshift"):
        glshift.load(junk)
    with pytest.raises(OSError):
        fitted.save(junk / "m.glshift")  # a file where a folder should be


def test_fit_releases_the_gil(data):
    X, y, sd, _, _ = blobs(n_source=300, n_target=300, dim=20)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.005)

    t = threading.Thread(target=tick)
    t.start()
    t0 = time.perf_counter()
    try:
        glshift.MUL(
            seed=0, pretrain_iters=200, adapt_iters=30, config={"pretrain_patience": 1000}
        ).fit(X, y, sample_domain=sd)
    finally:
        stop.set()
        t.join()
    elapsed = time.perf_counter() - t0
    # A thread holding the GIL for the whole fit would let the ticker run only at the edges.
    during = [x for x in ticks if t0 + 0.1 < x < t0 + elapsed - 0.1]
    assert elapsed < 0.5 or len(during) > 0.3 * (elapsed - 0.2) / 0.006, (elapsed, len(during))


def test_ctrl_c_stops_a_fit_within_a_second():
    X, y, sd, _, _ = blobs(n_source=300, n_target=300, dim=20)
    est = glshift.MUL(
        seed=0,
        pretrain_iters=1_000_000,
        adapt_iters=1_000_000,
        config={"pretrain_patience": 1_000_000},
    )
    sent = []

    def interrupt():
        sent.append(time.perf_counter())
        _thread.interrupt_main()

    # A shell without job control starts background jobs with SIGINT ignored, and then
    # interrupt_main() does nothing (the test hung under `.ci/run &`): the handler a terminal
    # would have is installed for the test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            est.fit(X, y, sample_domain=sd)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    latency = time.perf_counter() - sent[0]
    assert latency < 1.0, latency
    assert not hasattr(est, "model_")


def test_methods_are_the_core_registry_and_every_one_fits():
    # METHODS comes from the core's registry (it once lacked coral, which Python could not run).
    assert "coral" in glshift.METHODS and "mul" in glshift.METHODS and "source" in glshift.METHODS
    assert len(set(glshift.METHODS)) == len(glshift.METHODS)
    X, y, sd, _, _ = blobs(n_source=60, n_target=30)
    for m in glshift.METHODS:
        est = glshift.Adapter(method=m, seed=0, pretrain_iters=10, adapt_iters=2).fit(
            X, y, sample_domain=sd
        )
        assert est.config_["method"] == m
        p = est.predict_proba(X[:5])
        assert p.shape == (5, 3) and np.all(np.isfinite(p))


def _two_sources(data):
    """The fixture's source rows split into domains 1 and 2 (alternating), target -3."""
    sd = data["sd"].copy()
    src = np.flatnonzero(sd > 0)
    sd[src] = src % 2 + 1
    sd[sd < 0] = -3
    return sd


def test_several_sources_pool_whatever_the_row_order_and_predict(data):
    X, y = data["X"], data["y_int"]
    sd = _two_sources(data)
    a = glshift.MUL(seed=0, **FAST).fit(X, y, sample_domain=sd)
    # The same rows of each domain in the same order within it, domains grouped instead of
    # interleaved: the same fit.
    order = np.concatenate(
        [np.flatnonzero(sd == 2), np.flatnonzero(sd == 1), np.flatnonzero(sd < 0)]
    )
    b = glshift.MUL(seed=0, **FAST).fit(X[order], y[order], sample_domain=sd[order])
    Xt = X[sd < 0]
    assert np.array_equal(a.predict_proba(Xt), b.predict_proba(Xt))
    assert a.predict(Xt).shape == (len(Xt),)
    # One source domain is the single-source fit, whatever its id.
    one = np.where(sd > 0, 5, sd)
    c = glshift.MUL(seed=0, **FAST).fit(X, y, sample_domain=one)
    d = glshift.MUL(seed=0, **FAST).fit(X, y, sample_domain=data["sd"])
    assert np.array_equal(c.predict_proba(Xt), d.predict_proba(Xt))
