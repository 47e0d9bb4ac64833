import numpy as np
import pytest

# Few iterations everywhere: these tests check the binding, not the method's accuracy.
FAST = {"pretrain_iters": 30, "adapt_iters": 5}


def blobs(n_source=90, n_target=60, dim=5, seed=0, labels=("cat", "dog", "eel")):
    """Three Gaussian classes; the target is shifted and has another class prior."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(3, dim))
    ys = np.arange(n_source) % 3
    yt = rng.choice(3, size=n_target, p=[0.6, 0.3, 0.1])
    xs = centers[ys] + rng.normal(size=(n_source, dim))
    xt = centers[yt] + rng.normal(size=(n_target, dim)) + 0.5
    X = np.vstack([xs, xt])
    names = np.asarray(labels)
    y = np.concatenate([names[ys], np.full(n_target, None, dtype=object)]).astype(object)
    sd = np.concatenate([np.ones(n_source, dtype=np.int64), -2 * np.ones(n_target, dtype=np.int64)])
    return X, y, sd, ys, yt


@pytest.fixture(scope="session")
def data():
    """X (both domains), string labels (target rows None), sample_domain, int labels."""
    X, y, sd, ys, yt = blobs()
    y_int = np.concatenate([ys, -np.ones(len(yt), dtype=np.int64)])
    return {"X": X, "y": y, "sd": sd, "y_int": y_int, "yt": yt, "n_source": len(ys)}


@pytest.fixture(scope="session")
def fitted(data):
    import glshift

    return glshift.MUL(seed=0, **FAST).fit(data["X"], data["y_int"], sample_domain=data["sd"])
