"""Weaker features from a data folder: every domain's features projected on the first K
principal components of all domains' rows pooled (no label read), for the "partial DA on
weaker features" study (docs/safety.md). Writes OUT in the npy layout `glshift fit` reads:
<domain>_features.npy (float32, n x K), <domain>_labels.npy copied, classes.txt copied.

    python scripts/reduce_features.py DATA K OUT
"""

import os
import shutil
import sys

import numpy as np


def main(data, k, out):
    domains = sorted(
        f[: -len("_features.npy")] for f in os.listdir(data) if f.endswith("_features.npy")
    )
    feats = {
        d: np.load(os.path.join(data, f"{d}_features.npy")).astype(np.float64) for d in domains
    }
    pooled = np.concatenate(list(feats.values()))
    mean = pooled.mean(axis=0)
    # Principal axes of the pooled, centred rows (SVD; signs as numpy returns them).
    _, _, vt = np.linalg.svd(pooled - mean, full_matrices=False)
    axes = vt[:k].T
    os.makedirs(out, exist_ok=True)
    for d, x in feats.items():
        np.save(os.path.join(out, f"{d}_features.npy"), ((x - mean) @ axes).astype(np.float32))
        shutil.copy(os.path.join(data, f"{d}_labels.npy"), os.path.join(out, f"{d}_labels.npy"))
    shutil.copy(os.path.join(data, "classes.txt"), os.path.join(out, "classes.txt"))
    print(f"{len(domains)} domains, {pooled.shape[1]} -> {k} dims: {out}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
