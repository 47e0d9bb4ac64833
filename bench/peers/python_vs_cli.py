"""Time `glshift fit` (the CLI) and `glshift.MUL().fit` (the Python package) on the same task,
interleaved, each in its own process, and check they agree.

    python bench/peers/python_vs_cli.py --cli /work/target-py/release/glshift [--reps 3]
        [--source amazon --target webcam] [--seed 0] [--config settings.toml]

Per rep (the order alternates: CLI first on even reps, Python first on odd ones): the CLI's
process wall time and its fit time (report.json `elapsed_seconds`: the fit alone, without
loading and writing); the Python process's wall time (interpreter start, import, np.load, fit,
score) and its `fit` call's wall time; and each process's CPU time (user + sys, from
getrusage of the children: less sensitive to other jobs on a loaded machine than wall time).
Prints every rep, the medians, and the ratios Python/CLI of the medians. Also asserts that the
two runs score the same target accuracy.
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY_FIT = r"""
import json, sys, time
import numpy as np
import glshift
data, s, t, seed, config = sys.argv[1:6]
xs, ys = np.load(f"{data}/{s}_features.npy"), np.load(f"{data}/{s}_labels.npy")
xt, yt = np.load(f"{data}/{t}_features.npy"), np.load(f"{data}/{t}_labels.npy")
X = np.vstack([xs, xt])
y = np.concatenate([ys, -np.ones(len(yt), dtype=ys.dtype)])
sd = np.concatenate([np.ones(len(ys), dtype=int), -np.ones(len(yt), dtype=int)])
est = glshift.MUL(seed=int(seed), config=config or None)
t0, c0 = time.perf_counter(), time.process_time()
est.fit(X, y, sample_domain=sd)
fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"fit_s": fit_s, "fit_cpu_s": fit_cpu, "accuracy": est.score(xt, yt)}))
"""


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cli", required=True)
    ap.add_argument(
        "--data",
        default=str(
            Path(__file__).resolve().parents[3] / "shared/data/office_caltech10_effnetlite2"
        ),
    )
    ap.add_argument("--source", default="amazon")
    ap.add_argument("--target", default="webcam")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--config", default="")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    if not Path(a.data).is_dir():
        print(f"SKIPPED: {a.data} is absent")
        return 0

    def run_cli(out):
        cmd = [
            a.cli,
            "fit",
            "--data",
            a.data,
            "--source",
            a.source,
            "--target",
            a.target,
            "--seed",
            str(a.seed),
            "--out",
            out,
            "--quiet",
        ]
        if a.config:
            cmd += ["--config", a.config]
        t0, c0 = time.perf_counter(), child_cpu()
        subprocess.run(cmd, check=True, capture_output=True)
        wall, cpu = time.perf_counter() - t0, child_cpu() - c0
        r = json.loads((Path(out) / "report.json").read_text())
        return {
            "wall_s": wall,
            "cpu_s": cpu,
            "fit_s": r["elapsed_seconds"],
            "accuracy": r["target_accuracy"],
        }

    def run_py():
        t0, c0 = time.perf_counter(), child_cpu()
        p = subprocess.run(
            [sys.executable, "-c", PY_FIT, a.data, a.source, a.target, str(a.seed), a.config],
            check=True,
            capture_output=True,
            text=True,
        )
        wall, cpu = time.perf_counter() - t0, child_cpu() - c0
        r = json.loads(p.stdout.strip().splitlines()[-1])
        return {
            "wall_s": wall,
            "cpu_s": cpu,
            "fit_s": r["fit_s"],
            "fit_cpu_s": r["fit_cpu_s"],
            "accuracy": r["accuracy"],
        }

    cli, py = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            order = (
                [("cli", run_cli), ("python", run_py)]
                if rep % 2 == 0
                else [("python", run_py), ("cli", run_cli)]
            )
            for name, fn in order:
                r = fn(f"{tmp}/cli{rep}") if name == "cli" else fn()
                (cli if name == "cli" else py).append(r)
                print(
                    f"rep {rep} {name:>6}: fit {r['fit_s']:7.2f} s  process "
                    f"{r['wall_s']:7.2f} s (CPU {r['cpu_s']:7.2f} s)  accuracy "
                    f"{r['accuracy']:.6f}",
                    flush=True,
                )
    med = lambda rs, k: statistics.median(x[k] for x in rs)  # noqa: E731
    print(
        f"\nmedians over {a.reps} interleaved reps, {a.source} -> {a.target}, seed "
        f"{a.seed}{', config ' + a.config if a.config else ''}:"
    )
    print(
        f"  fit:     CLI {med(cli, 'fit_s'):.2f} s   Python {med(py, 'fit_s'):.2f} s   "
        f"Python/CLI {med(py, 'fit_s') / med(cli, 'fit_s'):.3f}"
    )
    print(
        f"  process: CLI {med(cli, 'wall_s'):.2f} s   Python {med(py, 'wall_s'):.2f} s   "
        f"Python/CLI {med(py, 'wall_s') / med(cli, 'wall_s'):.3f}"
    )
    print(
        f"  process CPU time (user+sys, all threads): CLI {med(cli, 'cpu_s'):.2f} s   Python "
        f"{med(py, 'cpu_s'):.2f} s   Python/CLI {med(py, 'cpu_s') / med(cli, 'cpu_s'):.3f}"
    )
    same = {r["accuracy"] for r in cli + py}
    print(f"  target accuracy: {sorted(same)} ({'identical' if len(same) == 1 else 'DIFFERENT'})")
    return 0 if len(same) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
