#!/usr/bin/env python3
"""Row-by-row comparison of extracted features with reference features (needs numpy):

    python bench/peers/compare_features.py OUT_DIR REF_DIR dslr webcam

Per domain: shape, whether labels are identical (same order), worst and mean cosine
similarity of matching rows, and how many rows fall below 0.999; then over all domains.
"""

import sys

import numpy as np


def main():
    out, ref, domains = sys.argv[1], sys.argv[2], sys.argv[3:]
    allc = []
    for d in domains:
        a, b = np.load(f"{out}/{d}_features.npy"), np.load(f"{ref}/{d}_features.npy")
        la, lb = np.load(f"{out}/{d}_labels.npy"), np.load(f"{ref}/{d}_labels.npy")
        c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        allc.append(c)
        print(
            f"{d}: {a.shape} {a.dtype}, labels {la.dtype} identical: "
            f"{bool(np.array_equal(la, lb))}, "
            f"cosine worst {c.min():.6f} (row {c.argmin()}) mean {c.mean():.6f}, rows < "
            f"0.999: {(c < 0.999).sum()}"
        )
    c = np.concatenate(allc)
    same = open(f"{out}/classes.txt").read() == open(f"{ref}/classes.txt").read()
    print(
        f"all {len(c)} rows: cosine worst {c.min():.6f} mean {c.mean():.6f}; classes.txt "
        f"identical: {same}"
    )


if __name__ == "__main__":
    main()
