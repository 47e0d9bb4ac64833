"""amazon -> webcam (Office-Caltech10, EfficientNet-Lite2 features): the Python estimator gives
exactly what `glshift fit` gives for the same data, settings and seed (reduced iterations,
through one TOML file both sides read). Skipped when ../shared/data or the CLI is absent."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import glshift

REPO = Path(__file__).resolve().parents[3]
DATA = REPO.parent / "shared" / "data" / "office_caltech10_effnetlite2"
SETTINGS = "pretrain_iters = 60\nadapt_iters = 15\n"


def cli_binary():
    """GLSHIFT_CLI, else the newest glshift binary of the workspace's target folder(s)."""
    if os.environ.get("GLSHIFT_CLI"):
        return Path(os.environ["GLSHIFT_CLI"])
    roots = [Path(os.environ["CARGO_TARGET_DIR"])] if os.environ.get("CARGO_TARGET_DIR") else []
    roots.append(REPO / "target")
    found = [
        r / p / "glshift"
        for r in roots
        for p in ("release", "debug")
        if (r / p / "glshift").is_file()
    ]
    if found:
        return max(found, key=lambda p: p.stat().st_mtime)
    return shutil.which("glshift") and Path(shutil.which("glshift"))


def load(domain):
    x = np.load(DATA / f"{domain}_features.npy")
    y = np.load(DATA / f"{domain}_labels.npy")
    return x, y


def test_python_fit_equals_glshift_fit_on_amazon_to_webcam(tmp_path):
    if not DATA.is_dir():
        print(f"SKIPPED: {DATA} is absent")
        pytest.skip(f"{DATA} is absent")
    cli = cli_binary()
    if not cli:
        print("SKIPPED: no glshift CLI binary (build it, or set GLSHIFT_CLI)")
        pytest.skip("no glshift CLI binary (build it, or set GLSHIFT_CLI)")
    config = tmp_path / "settings.toml"
    config.write_text(SETTINGS)
    out = tmp_path / "cli"
    subprocess.run(
        [
            str(cli),
            "fit",
            "--data",
            str(DATA),
            "--source",
            "amazon",
            "--target",
            "webcam",
            "--seed",
            "0",
            "--config",
            str(config),
            "--out",
            str(out),
            "--quiet",
        ],
        check=True,
    )
    report = json.loads((out / "report.json").read_text())

    # The class set and order of `glshift fit` (classes.txt): use its names as the labels;
    # they are sorted, so classes_ (sorted unique source labels) has the same order.
    names = np.asarray((DATA / "classes.txt").read_text().split("\n")[: len(report["classes"])])
    assert names.tolist() == report["classes"] == sorted(report["classes"])
    xs, ys = load("amazon")
    xt, yt = load("webcam")
    X = np.vstack([xs, xt])
    y = np.concatenate([names[ys], np.full(len(xt), "-1")])
    sd = np.concatenate([np.ones(len(xs), dtype=int), -np.ones(len(xt), dtype=int)])
    est = glshift.MUL(seed=0, config=config).fit(X, y, sample_domain=sd)
    assert est.classes_.tolist() == report["classes"]

    cli_model = glshift.load(out / "model.glshift")
    np.testing.assert_array_equal(est.predict_proba(xt), cli_model.predict_proba(xt))
    acc = est.score(xt, names[yt])
    assert acc == report["target_accuracy"], (acc, report["target_accuracy"])
    np.testing.assert_array_equal(est.target_prior_, report["estimated_target_prior"])
    print(
        f"amazon->webcam, {SETTINGS.strip()!r}: Python {acc:.6f} == CLI "
        f"{report['target_accuracy']:.6f}"
    )
