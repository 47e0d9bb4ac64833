"""Acceptance on amazon -> webcam with default settings (full iterations):
glshift.MUL(seed=0) in the skada convention scores exactly what `glshift fit --seed 0` scores,
and skada.make_da_pipeline(StandardScaler(), glshift.MUL(seed=0)) fits and predicts.

    python bench/peers/acceptance_amazon_webcam.py --cli /work/target-py/release/glshift
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import skada
from sklearn.preprocessing import StandardScaler

import glshift

ap = argparse.ArgumentParser()
ap.add_argument("--cli", required=True)
ap.add_argument(
    "--data",
    default=str(Path(__file__).resolve().parents[3] / "shared/data/office_caltech10_effnetlite2"),
)
a = ap.parse_args()
data = Path(a.data)
if not data.is_dir():
    print(f"SKIPPED: {data} is absent")
    sys.exit(0)

with tempfile.TemporaryDirectory() as out:
    subprocess.run(
        [
            a.cli,
            "fit",
            "--data",
            str(data),
            "--source",
            "amazon",
            "--target",
            "webcam",
            "--seed",
            "0",
            "--out",
            out,
            "--quiet",
        ],
        check=True,
    )
    cli_acc = json.loads((Path(out) / "report.json").read_text())["target_accuracy"]
    cli_model = glshift.load(Path(out) / "model.glshift")

xs, ys = np.load(data / "amazon_features.npy"), np.load(data / "amazon_labels.npy")
xt, yt = np.load(data / "webcam_features.npy"), np.load(data / "webcam_labels.npy")
X = np.vstack([xs, xt])
y = np.concatenate([ys, -np.ones(len(yt), dtype=ys.dtype)])
sd = np.concatenate([np.ones(len(ys), dtype=int), -np.ones(len(yt), dtype=int)])

mul = glshift.MUL(seed=0).fit(X, y, sample_domain=sd)
py_acc = mul.score(xt, yt)
same_proba = np.array_equal(mul.predict_proba(xt), cli_model.predict_proba(xt))
print(f"glshift fit --seed 0:      target accuracy {cli_acc:.6f}")
print(
    f"glshift.MUL(seed=0).fit:   target accuracy {py_acc:.6f}  (equal: {py_acc == cli_acc}; "
    f"probabilities bit-identical: {same_proba})"
)

pipe = skada.make_da_pipeline(StandardScaler(), glshift.MUL(seed=0))
pipe.fit(X, y, sample_domain=sd)
pred = pipe.predict(xt, sample_domain=-np.ones(len(yt), dtype=int))
print(
    f"make_da_pipeline(StandardScaler(), MUL(seed=0)): fits and predicts {len(pred)} rows, "
    f"target accuracy {np.mean(pred == yt):.6f}"
)
sys.exit(0 if py_acc == cli_acc and same_proba else 1)
