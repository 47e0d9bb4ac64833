"""Lower bound on the time of a full `glshift bench` grid (all 11 methods x 12 tasks x
3 seeds of one setting in under 30 minutes on the 2-core machine).

Counts only the GEMM work of the adaptation stage with the default widths: G and F forward and
backward (d -> 512 -> 256 -> c; no input gradient for the first layer) on the rows that receive a
gradient (source training rows, and target rows for the adapting methods), and, for the
adversarial methods, the domain discriminator (1024 -> 1024 -> 2, the papers' width; CDAN's input
is the d_Z*c = 2560-d multilinear map) forward and backward with its input gradient on the
source-training and target rows. Pre-training (shared by the methods of a
task and seed), the kernel terms of MUL/DAN/JAN, BBSE, softmax and everything else are left out,
and the hold-out is taken as 25% (ours is 20%), so the true work is larger.
Dividing by the fastest GEMM rate measured on the machine gives a time no implementation of
these methods can beat there.

    python3 bench/reference/grid_flops.py ../shared/data/office_caltech10_effnetlite2 400
"""

import itertools
import struct
import sys
from pathlib import Path


def npy_rows(path):
    with open(path, "rb") as f:
        head = f.read(10)
        major = head[6]
        hlen = (
            struct.unpack("<H", head[8:10])[0]
            if major == 1
            else struct.unpack("<I", head[8:10] + f.read(2))[0]
        )
        header = f.read(hlen).decode("latin1")
    shape = header.split("'shape':")[1].split(")")[0].strip(" (")
    return [int(x) for x in shape.split(",") if x.strip()]


def main():
    data = Path(sys.argv[1])
    gemm_gflops = float(sys.argv[2])
    seeds, iters, h1, h2, disc = 3, 300, 512, 256, 1024
    domains = sorted(p.name[: -len("_features.npy")] for p in data.glob("*_features.npy"))
    rows = {dom: npy_rows(data / f"{dom}_features.npy") for dom in domains}
    c = len((data / "classes.txt").read_text().split())
    d = next(iter(rows.values()))[1]
    params_g = d * h1 + h1 * h2 + h2 * c
    g_row = (
        2 * params_g + 2 * params_g + 2 * (h1 * h2 + h2 * c)
    )  # forward, weight grads, input grads past layer 1

    def disc_row(input_dim):
        q = input_dim * disc + disc * disc + disc * 2
        return 6 * q  # forward, weight grads, input grads

    per_method = {}
    for s, t in itertools.permutations(domains, 2):
        ns, nt = rows[s][0], rows[t][0]
        n_train = 0.75 * ns
        work = {
            "source": n_train * g_row,
            **{m: (n_train + nt) * g_row for m in ["mul", "mmd-classwise", "dan", "jan"]},
            **{m: (n_train + nt) * (g_row + disc_row(h2)) for m in ["dann", "iw-dann", "pada"]},
            **{
                m: (n_train + nt) * (g_row + disc_row(h2 * c))
                for m in ["cdan", "cdan-e", "iw-cdan"]
            },
        }
        for m, w in work.items():
            per_method[m] = per_method.get(m, 0.0) + seeds * iters * w
    total = sum(per_method.values())
    print(
        f"{len(domains)} domains, d = {d}, c = {c}, {len(per_method)} methods x "
        f"{len(domains) * (len(domains) - 1)} tasks x {seeds} seeds"
    )
    for m, w in sorted(per_method.items(), key=lambda kv: -kv[1]):
        print(f"  {m:14s} {w / 1e12:8.1f} TFLOP  {w / total:6.1%}")
    print(f"total {total / 1e12:.0f} TFLOP of GEMM in adaptation alone")
    print(
        f"at {gemm_gflops:.0f} GFLOP/s: at least {total / gemm_gflops / 1e9:.0f} s "
        f"({total / gemm_gflops / 1e9 / 60:.0f} min)"
    )


if __name__ == "__main__":
    main()
