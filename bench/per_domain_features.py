#!/usr/bin/env python3
"""A copy of a features folder with every domain standardised on its own (docs/multi-source.md).

Each `<domain>_features.npy` of SRC is written to DST with its columns either z-scored with the
domain's own mean and standard deviation (`zscore`; a constant column keeps scale 1) or centred
on the domain's own mean (`center`); labels and `classes.txt` are copied. Statistics use the
features only (never a label), in float64, written back as float32. A `glshift bench --setting
msda` grid on DST measures the per-domain rule; the fit's own z-score then runs on top.

    python3 bench/per_domain_features.py SRC DST zscore|center
"""

import os
import shutil
import sys

import numpy as np


def transform(x, mode):
    x = x.astype(np.float64)
    centred = x - x.mean(axis=0)
    if mode == "center":
        return centred
    scale = x.std(axis=0)
    scale[scale < 1e-12] = 1.0
    return centred / scale


def main(argv):
    if len(argv) != 3 or argv[2] not in ("zscore", "center"):
        sys.exit(__doc__)
    src, dst, mode = argv
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if name.endswith("_features.npy"):
            x = np.load(path)
            if x.ndim != 2 or not np.isfinite(x).all():
                sys.exit(f"{path}: expected a finite 2-d array, found shape {x.shape}")
            np.save(os.path.join(dst, name), transform(x, mode).astype(np.float32))
        elif name.endswith(".npy") or name == "classes.txt":
            shutil.copy(path, dst)


if __name__ == "__main__":
    main(sys.argv[1:])
