#!/usr/bin/env python3
"""Side-by-side timing: one epoch of source pre-training, PyTorch (CPU) vs `glshift fit`.

The same network and loss in PyTorch on the CPU, side by side in one run. Not a test: nothing in
CI runs it. It needs `torch` and `numpy`
(e.g. `python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch numpy`) and a release
build of the CLI (`cargo build --release -p glshift-cli`).

    /tmp/torchenv/bin/python scripts/bench_torch.py --data /tmp/visda07 \
        [--glshift target/release/glshift] [--threads 2] [--batch 512] \
        [--work /tmp/bench_torch_work]

DATA is a folder written by `glshift generate` (source_features.npy, source_labels.npy,
target_features.npy). The two sides do the same work:

PyTorch, what a user would write instead of glshift's `source` method: z-score with source
statistics; G = Linear(d,512) -> BatchNorm1d -> ReLU -> Linear(512,256) -> BatchNorm1d -> ReLU
(glshift's default NetworkConfig: hidden [512, 256], BatchNorm after each Linear, ReLU on every
block including Z's, dropout 0), F = Linear(256, c); He-normal init for G, Glorot-normal for F,
biases 0 (glshift's init); AdamW lr 1e-3, betas (0.9, 0.999), eps 1e-8, decoupled weight decay
1e-2 on Linear weights only (glshift's AdamConfig); mean cross-entropy; float32; batches of 512
rows in train mode (BatchNorm statistics from the batch). Two timings:
  plain   one epoch over all source rows, shuffled, full batches only: the user's loop;
  like    the same loop with glshift's extras, so the ratio can be read like for like: a random 20%
          hold-out left out of training, a loop of n_train // 512 steps, and an evaluation-mode pass
          over the hold-out (8192-row chunks, loss and accuracy) every 25 steps starting at step 0.

glshift: `glshift fit --method source` with training = "mini-batch", pretrain_iters = the steps of
one epoch over its training rows (n_source_train // 512, n_source_train = 80% of the source after
its stratified hold-out), pretrain_patience = pretrain_iters (a window >= pretrain_iters turns early
stopping off), adapt_iters = 0, [minibatch] batch_size = 512. RAYON_NUM_THREADS = --threads (the CLI
caps its GEMM threads to it too). Its report.json `elapsed_seconds` covers z-scoring source and
target, the hold-out split, the training steps with a hold-out evaluation every 25 steps (and a copy
of the network at each improvement), and the final evaluation-mode predictions of the target and the
hold-out; it excludes reading the .npy files, the diagnostics and prior interval after the fit and
writing the outputs (the wall time of the process minus elapsed_seconds). A second run with
pretrain_iters = 1 (one step, one hold-out evaluation) measures that fixed part, so (elapsed(full) -
elapsed(1 step)) / (steps - 1) is glshift's marginal cost of one training step including its share
of hold-out evaluations.

Prints per epoch, per step and per 1 000 training rows, and the ratios glshift / PyTorch by wall
time and by process CPU time (glshift's marginal CPU: the difference of the two processes' CPU
times, in which reading the .npy files and the diagnostics cancel). On a machine shared with other
jobs the CPU ratio is the steadier one, and --threads 1 the steadier setting: PyTorch's OpenMP
threads lose much more than glshift's when a core is taken away (a median 2-thread step several
times its fastest).
"""

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

print = functools.partial(print, flush=True)  # progress shows when the output goes to a file


def cpu_self():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Net(nn.Module):
    """glshift's default network: G = [Linear -> BatchNorm1d -> ReLU] x 2 (512, 256), F = Linear."""

    def __init__(self, d, c, hidden=(512, 256)):
        super().__init__()
        layers, fan_in = [], d
        for width in hidden:
            lin = nn.Linear(fan_in, width)
            nn.init.normal_(lin.weight, std=(2.0 / fan_in) ** 0.5)  # He-normal (ReLU)
            nn.init.zeros_(lin.bias)
            layers += [lin, nn.BatchNorm1d(width, eps=1e-5), nn.ReLU()]
            fan_in = width
        self.g = nn.Sequential(*layers)
        self.f = nn.Linear(fan_in, c)
        nn.init.normal_(self.f.weight, std=(2.0 / (fan_in + c)) ** 0.5)  # Glorot-normal
        nn.init.zeros_(self.f.bias)

    def forward(self, x):
        return self.f(self.g(x))


def make_optimizer(net):
    decay = [m.weight for m in net.modules() if isinstance(m, nn.Linear)]
    ids = {id(p) for p in decay}
    rest = [p for p in net.parameters() if id(p) not in ids]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": 1e-2}, {"params": rest, "weight_decay": 0.0}],
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
    )


def evaluate(net, x, y, chunk=8192):
    net.eval()
    nll, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, x.shape[0], chunk):
            logits = net(x[i : i + chunk])
            nll += nn.functional.cross_entropy(logits, y[i : i + chunk], reduction="sum").item()
            correct += (logits.argmax(1) == y[i : i + chunk]).sum().item()
    net.train()
    return nll / x.shape[0], correct / x.shape[0]


def torch_epoch(x, y, c, batch, seed, holdout=None, eval_every=25, steps=None):
    """One epoch of mini-batch training; returns (wall s, process CPU s, steps, rows, last loss)."""
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    net = Net(x.shape[1], c)
    opt = make_optimizer(net)
    loss_fn = nn.CrossEntropyLoss()
    n = x.shape[0]
    if steps is None:
        steps = n // batch
    net.train()
    w0, c0 = time.perf_counter(), cpu_self()
    perm = torch.randperm(n, generator=g)
    loss = None
    step_times = []
    for step in range(steps):
        if holdout is not None and step % eval_every == 0:
            evaluate(net, *holdout)
        t0 = time.perf_counter()
        idx = perm[step * batch : (step + 1) * batch]
        xb, yb = x[idx], y[idx]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(xb), yb)
        loss.backward()
        opt.step()
        step_times.append(time.perf_counter() - t0)
    loss_value = loss.item() if loss is not None else float("nan")
    wall, cpu = time.perf_counter() - w0, cpu_self() - c0
    step_times.sort()
    return (
        wall,
        cpu,
        steps,
        steps * batch,
        f"last ce {loss_value:.3f}; training step median "
        f"{1000 * step_times[len(step_times) // 2]:.1f} ms, fastest "
        f"{1000 * step_times[0]:.1f} ms",
    )


def warm_up(x, y, c, batch, steps=5):
    """A few steps on a throwaway network (first-call costs of the GEMM/oneDNN kernels); untimed."""
    net = Net(x.shape[1], c)
    opt = make_optimizer(net)
    w0 = time.perf_counter()
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(
            net(x[step * batch : (step + 1) * batch]), y[step * batch : (step + 1) * batch]
        ).backward()
        opt.step()
    evaluate(net, x[:batch], y[:batch])
    return time.perf_counter() - w0


def run_glshift(binary, data, work, name, iters, batch, threads, seed):
    out = work / f"out_{name}"
    cfg = work / f"{name}.toml"
    cfg.write_text(
        'training = "mini-batch"\n'
        f"pretrain_iters = {iters}\n"
        f"pretrain_patience = {iters}\n"
        "adapt_iters = 0\n"
        "[minibatch]\n"
        f"batch_size = {batch}\n"
    )
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    cmd = [
        str(binary),
        "fit",
        "--data",
        str(data),
        "--source",
        "source",
        "--target",
        "target",
        "--method",
        "source",
        "--seed",
        str(seed),
        "--config",
        str(cfg),
        "--out",
        str(out),
        "--quiet",
    ]
    c0, w0 = cpu_children(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - w0, cpu_children() - c0
    if proc.returncode != 0:
        sys.exit(f"glshift failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    report = json.loads((out / "report.json").read_text())
    hist = [h for h in report["history"] if h["stage"] == "pretrain"]
    return {
        "cmd": " ".join(cmd),
        "wall": wall,
        "cpu": cpu,
        "elapsed": report["elapsed_seconds"],
        "n_train": report["n_source_train"],
        "n_hold": report["n_source_holdout"],
        "steps": len(hist),
        "evals": sum(1 for h in hist if h.get("holdout")),
        "last_ce": hist[-1]["ce"] if hist else float("nan"),
        "accuracy": report.get("target_accuracy"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument(
        "--glshift",
        default=Path(__file__).resolve().parent.parent / "target/release/glshift",
        type=Path,
    )
    ap.add_argument("--threads", default=2, type=int)
    ap.add_argument("--batch", default=512, type=int)
    ap.add_argument("--seed", default=0, type=int)
    ap.add_argument("--work", default=Path("/tmp/bench_torch_work"), type=Path)
    ap.add_argument(
        "--skip-like",
        action="store_true",
        help="skip the PyTorch run with glshift's hold-out evaluations",
    )
    ap.add_argument(
        "--skip-fixed", action="store_true", help="skip glshift's 1-step run (its fixed costs)"
    )
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    print(
        f"load average {os.getloadavg()[0]:.1f} at start; torch {torch.__version__}, numpy "
        f"{np.__version__}, torch threads {torch.get_num_threads()}, "
        f"glshift RAYON_NUM_THREADS={args.threads}, batch {args.batch}, data {args.data}"
    )

    # --- PyTorch ---------------------------------------------------------------------------
    w0 = time.perf_counter()
    xs = np.ascontiguousarray(np.load(args.data / "source_features.npy"), dtype=np.float32)
    ys = np.load(args.data / "source_labels.npy").astype(np.int64)
    t_load = time.perf_counter() - w0
    n, d = xs.shape
    c = int(ys.max()) + 1
    w0 = time.perf_counter()
    x = torch.from_numpy(xs)
    mean = x.mean(0)
    std = x.std(0, correction=0).clamp_min(1e-12)
    x.sub_(mean).div_(std)  # in place, source statistics (target: the same map, not timed here)
    t_z = time.perf_counter() - w0
    y = torch.from_numpy(ys)
    print(
        f"source {n} rows x {d} dims, {c} classes; torch: read source {t_load:.1f} s, "
        f"z-score {t_z:.1f} s (not in the epoch times)"
    )

    print(
        f"torch warm-up: {warm_up(x, y, c, args.batch):.1f} s for 5 steps + 1 eval on a "
        "throwaway network (not timed below)"
    )
    results = []
    wall, cpu, steps, rows, note = torch_epoch(x, y, c, args.batch, args.seed)
    results.append(("torch plain", wall, cpu, steps, rows, note))
    if not args.skip_like:
        g = torch.Generator().manual_seed(args.seed + 1)
        perm = torch.randperm(n, generator=g)
        n_hold = int(round(0.2 * n))
        hold, train = perm[:n_hold], perm[n_hold:]
        xh, yh = x[hold], y[hold]
        xt, yt = x[train], y[train]
        n_steps = xt.shape[0] // args.batch
        wall, cpu, steps, rows, note = torch_epoch(
            xt, yt, c, args.batch, args.seed, holdout=(xh, yh), steps=n_steps
        )
        n_evals = (n_steps + 24) // 25
        results.append(
            (
                "torch like",
                wall,
                cpu,
                steps,
                rows,
                f"{note}; + {n_evals} hold-out evals of {n_hold} rows",
            )
        )
        del xh, yh, xt, yt
    del x, xs, y

    # --- glshift ---------------------------------------------------------------------------
    n_train_est = n - int(round(0.2 * n))
    iters = max(n_train_est // args.batch, 2)
    full = run_glshift(
        args.glshift, args.data, args.work, "epoch", iters, args.batch, args.threads, args.seed
    )
    if full["n_train"] // args.batch != iters:  # the stratified split rounds per class
        iters = full["n_train"] // args.batch
        full = run_glshift(
            args.glshift, args.data, args.work, "epoch", iters, args.batch, args.threads, args.seed
        )
    print(f"glshift: {full['cmd']}")
    print(
        f"  n_source_train {full['n_train']}, hold-out {full['n_hold']}, {full['steps']} steps, "
        f"{full['evals']} hold-out evals, last ce {full['last_ce']:.3f}, target accuracy "
        f"{full['accuracy']}"
    )
    print(
        f"  process wall {full['wall']:.1f} s, CPU {full['cpu']:.1f} s; elapsed_seconds "
        f"{full['elapsed']:.1f} s; "
        f"wall - elapsed (read .npy, diagnostics, outputs) {full['wall'] - full['elapsed']:.1f} s"
    )
    results.append(
        (
            "glshift elapsed",
            full["elapsed"],
            None,
            full["steps"],
            full["steps"] * args.batch,
            f"z-score + {full['evals']} evals + final predictions included",
        )
    )
    if not args.skip_fixed:
        one = run_glshift(
            args.glshift, args.data, args.work, "one_step", 1, args.batch, args.threads, args.seed
        )
        print(
            f"  1-step run: elapsed_seconds {one['elapsed']:.1f} s (z-score, split, 1 step, "
            "1 eval, final predictions), "
            f"process wall {one['wall']:.1f} s, CPU {one['cpu']:.1f} s"
        )
        marg = (full["elapsed"] - one["elapsed"]) / (full["steps"] - 1)
        marg_cpu = (full["cpu"] - one["cpu"]) / (
            full["steps"] - 1
        )  # process CPU: the reads and diagnostics cancel
        results.append(
            (
                "glshift marginal",
                marg * full["steps"],
                marg_cpu * full["steps"],
                full["steps"],
                full["steps"] * args.batch,
                f"(elapsed - 1-step elapsed) / {full['steps'] - 1} steps x {full['steps']}; "
                f"{full['evals'] - 1} of the evals included",
            )
        )

    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    print()
    print(
        f"{'run':<18}{'steps':>6}{'rows':>9}{'wall s/epoch':>14}"
        f"{'CPU s/epoch':>13}{'ms/step':>9}{'s/1000 rows':>13}  note"
    )
    for name, wall, cpu, steps, rows, note in results:
        cpu_s = f"{cpu:13.1f}" if cpu is not None else f"{'-':>13}"
        print(
            f"{name:<18}{steps:>6}{rows:>9}{wall:>14.2f}{cpu_s}"
            f"{1000 * wall / steps:>9.1f}{1000 * wall / rows:>13.3f}  {note}"
        )
    print()
    for kind, col in (("wall", 1), ("CPU", 2)):
        per_row = {r[0]: r[col] / r[4] for r in results if r[col] is not None}
        for name in per_row:
            if name.startswith("glshift"):
                line = (
                    f"ratio per row ({kind}), {name} / torch plain: "
                    f"{per_row[name] / per_row['torch plain']:.2f}"
                )
                if "torch like" in per_row:
                    line += f"; / torch like: {per_row[name] / per_row['torch like']:.2f}"
                print(line)


if __name__ == "__main__":
    main()
