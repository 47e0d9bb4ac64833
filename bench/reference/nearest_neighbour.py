"""1-nearest-neighbour accuracy across domains on raw features: the classic reference point of the
JDA line of work (Long et al. 2013) for MNIST <-> USPS pixels. No hyper-parameter; the target
labels score only.

    python3 bench/reference/nearest_neighbour.py ../shared/data/mnist_usps mnist usps
"""

import sys
from pathlib import Path

import numpy as np


def load(data, domain):
    return np.load(data / f"{domain}_features.npy").astype(np.float64), np.load(
        data / f"{domain}_labels.npy"
    )


def main():
    data, source, target = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    xs, ys = load(data, source)
    xt, yt = load(data, target)
    correct = 0
    for start in range(0, len(xt), 512):  # blocks keep the distance matrix small
        block = xt[start : start + 512]
        d2 = (block**2).sum(1)[:, None] - 2 * block @ xs.T + (xs**2).sum(1)[None, :]
        correct += int((ys[d2.argmin(1)] == yt[start : start + 512]).sum())
    print(f"1-NN {source} -> {target}: {100 * correct / len(xt):.1f}% of {len(xt)} target rows")


if __name__ == "__main__":
    main()
