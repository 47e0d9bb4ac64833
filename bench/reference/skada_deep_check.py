"""Reference check of glshift's deep baselines : skada's deep module
(`skada.deep`: SourceOnly, DANN, CDAN, DAN, DeepCoral; skorch + torch) on the same frozen
Office-Caltech10 features, with glshift's network and the papers' schedule, beside glshift's
accuracies read from `glshift bench` output folders.

    OMP_NUM_THREADS=1 python bench/reference/skada_deep_check.py \
        --data ../shared/data/office_caltech10_effnetlite2 --seeds 0 \
        --glshift bench-uda-paper --out skada-check [--tasks amazon:webcam,...]

Needs torch, skorch and skada (pip install skada skorch scikit-learn; CPU torch is enough).
Resumable: each (method, task, seed) result is a JSON file under OUT/runs, read back when present.
Target labels are read only to score (the accuracy printed); no setting below depends on them.

What is the same as glshift (defaults of `BaselineConfig`, docs/baselines.md):
- input: z-score with the statistics of all source rows; a stratified 20% source hold-out
  (its own seeded draw, not glshift's rows) that only pre-training reads;
- network: G = Linear(1280→512)→BN→ReLU→Linear(512→256)→BN→ReLU, F = Linear(256→c); Z = G's
  output is the adapted layer (skada's `layer_name`);
- pre-training: full-batch AdamW (lr 1e-3, weight decay 1e-2 on Linear weights) on the source
  training rows, at most 500 steps, stopped once the hold-out NLL has not fallen below
  best·(1 − 0.05) for 20 steps, best network kept (glshift's rule); BatchNorm's statistics in
  evaluation are those of the source training rows, as glshift's;
- adaptation from the pre-trained network (a copy per method): SGD, momentum 0.9, Nesterov,
  weight decay 1e-3 on Linear weights, lr 0.01·(1 + 10p)^−0.75 stepped per batch, 36 source + 36
  target rows per batch (skada's DomainBalancedDataLoader), about 1 000 iterations (whole epochs of
  skada's loader: the count is printed), transfer weight `reg` = 1;
- DANN and CDAN's discriminator: 1024 → 1024 → 1, ReLU, dropout 0.5, sigmoid (skada's BCE loss),
  started as torch's default Linear (`--disc-init torch`, the default) or as the reference code's
  AdversarialNetwork, glshift's start (`--disc-init reference`: N(0, 0.01) hidden weights,
  N(0, 0.3) logit weights, zero biases; use another --out, the runs' names do not record it),
  behind a gradient reversal whose coefficient ramps as 2/(1 + exp(−10p)) − 1 (a callback).

What is skada's own (not changed here, so that the check is of skada, not of a rewrite):
- BatchNorm during training sees the mixed source + target batch, and skada predicts with
  torch's running statistics; the `skada` column is that. The `skada·bn` column predicts with the
  same weights after BatchNorm's statistics are reset to the source training rows (glshift's rule);
- CDAN conditions on the raw logits (skada's `CDANModule` multiplies the classifier's outputs,
  not their softmax, into the multilinear map);
- DAN's kernel: skada's 33 kernels exp(−‖z − z′‖/σ) around the median distance, not glshift's 5
  Gaussians on the squared distance; DeepCoral's loss: skada's ‖C_S − C_T‖²_F/(4d²) per batch
  (glshift's CORAL is full-batch AdamW, not mini-batch SGD);
- SourceOnly trains 36-row source batches by the same SGD schedule; glshift's `source` continues
  pre-training full-batch (AdamW, `adapt_iters` steps). The `pretrained` row is the network both
  start from (seeded by torch, so not glshift's initial weights).
"""

import argparse
import copy
import json
import math
import sys
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np

DOMAINS = ("amazon", "caltech", "dslr", "webcam")
METHODS = ("pretrained", "source", "dann", "cdan", "dan", "coral")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=Path("../shared/data/office_caltech10_effnetlite2"))
    p.add_argument("--tasks", default=None, help="SOURCE:TARGET pairs (default: all 12)")
    p.add_argument("--seeds", default="0")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument(
        "--disc-init",
        choices=("torch", "reference"),
        default="torch",
        help="the discriminator's start (see the module docs)",
    )
    p.add_argument(
        "--glshift", type=Path, nargs="*", default=[], help="glshift bench output folders"
    )
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args()


def load(data, domain):
    x = np.load(data / f"{domain}_features.npy").astype(np.float32)
    y = np.load(data / f"{domain}_labels.npy").astype(np.int64)
    if x.ndim != 2 or len(x) != len(y):
        sys.exit(f"{data}/{domain}_*.npy: features {x.shape} and labels {y.shape} do not match")
    return x, y


def zscore(xs, xt):
    mean, std = xs.mean(0), xs.std(0)
    std[std == 0] = 1.0
    return (xs - mean) / std, (xt - mean) / std


def stratified_holdout(y, fraction, seed):
    rng = np.random.default_rng(seed)
    hold = []
    for k in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == k))
        m = min(max(int(round(fraction * len(rows))), 1), len(rows) - 1) if len(rows) >= 2 else 0
        hold.extend(rows[:m])
    hold = np.sort(np.array(hold, dtype=np.int64))
    train = np.setdiff1d(np.arange(len(y)), hold)
    return train, hold


def make_net(d, c):
    from torch import nn

    class Net(nn.Module):
        """G (two Linear→BN→ReLU blocks, Z = 256) and F (Linear), glshift's default network."""

        def __init__(self):
            super().__init__()
            self.g = nn.Sequential(
                OrderedDict(
                    [
                        ("lin1", nn.Linear(d, 512)),
                        ("bn1", nn.BatchNorm1d(512)),
                        ("relu1", nn.ReLU()),
                        ("lin2", nn.Linear(512, 256)),
                        ("bn2", nn.BatchNorm1d(256)),
                        ("relu2", nn.ReLU()),
                    ]
                )
            )
            self.head = nn.Linear(256, c)

        def forward(self, x, sample_weight=None):
            return self.head(self.g(x))

    return Net()


def set_bn_stats(net, x):
    """BatchNorm's evaluation statistics := those of `x` (glshift's rule: source training rows)."""
    import torch

    bns = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    saved = [m.momentum for m in bns]
    for m in bns:
        m.momentum = 1.0
    net.train()
    with torch.no_grad():
        net(torch.as_tensor(x))
    for m, mom in zip(bns, saved, strict=False):
        m.momentum = mom
    net.eval()


def pretrain(xs_tr, ys_tr, xs_ho, ys_ho, c, seed, iters=500, patience=20, rho=0.05):
    """glshift's pre-training rule (module docs), in torch."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    net = make_net(xs_tr.shape[1], c)
    decay = [
        p for n, p in net.named_parameters() if n.endswith("weight") and ("lin" in n or "head" in n)
    ]
    rest = [
        p
        for n, p in net.named_parameters()
        if not (n.endswith("weight") and ("lin" in n or "head" in n))
    ]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 1e-2}, {"params": rest, "weight_decay": 0.0}], lr=1e-3
    )
    xtr, ytr = torch.as_tensor(xs_tr), torch.as_tensor(ys_tr)
    xho, yho = torch.as_tensor(xs_ho), torch.as_tensor(ys_ho)
    best, best_at, best_state = None, 0, None
    for it in range(iters):
        set_bn_stats(net, xs_tr)
        with torch.no_grad():
            nll = F.cross_entropy(net(xho), yho).item()
        if best is None or nll < best * (1 - rho):
            best, best_at, best_state = nll, it, copy.deepcopy(net.state_dict())
        elif it - best_at >= patience:
            break
        net.train()
        opt.zero_grad()
        F.cross_entropy(net(xtr), ytr).backward()
        opt.step()
    net.load_state_dict(best_state)
    set_bn_stats(net, xs_tr)
    return net, it


def discriminator(d_in, p_holder, init="torch"):
    import torch
    from torch import nn

    class Reverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, coef):
            ctx.coef = coef
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return -ctx.coef * g, None

    class Disc(nn.Module):
        """1024 → 1024 → 1 (ReLU, dropout 0.5), sigmoid for skada's BCE; reversal ramped by p."""

        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(
                OrderedDict(
                    [
                        ("lin1", nn.Linear(d_in, 1024)),
                        ("relu1", nn.ReLU()),
                        ("drop1", nn.Dropout(0.5)),
                        ("lin2", nn.Linear(1024, 1024)),
                        ("relu2", nn.ReLU()),
                        ("drop2", nn.Dropout(0.5)),
                        ("lin3", nn.Linear(1024, 1)),
                        ("sig", nn.Sigmoid()),
                    ]
                )
            )
            if init == "reference":
                for name, std in (("lin1", 0.01), ("lin2", 0.01), ("lin3", 0.3)):
                    layer = getattr(self.net, name)
                    nn.init.normal_(layer.weight, 0.0, std)
                    nn.init.zeros_(layer.bias)

        def forward(self, x, sample_weight=None):
            p = p_holder["p"]
            coef = 2.0 / (1.0 + math.exp(-10.0 * p)) - 1.0
            return self.net(Reverse.apply(x, coef)).squeeze(-1)

    return Disc()


def skada_fit(method, net, xs, ys, xt, seed, iterations, c, disc_init="torch"):
    """One skada estimator from a copy of the pre-trained `net`; returns (estimator, iterations
    run)."""
    import torch
    from skada.deep import CDAN, DAN, DANN, DeepCoral, SourceOnly
    from skorch.callbacks import Callback, LRScheduler

    b = 36
    per_epoch_s = len(xs) // b
    per_epoch = per_epoch_s if method == "source" else max(len(xs) // b, len(xt) // b)
    epochs = max(1, round(iterations / per_epoch))
    total = epochs * per_epoch
    state = {"p": 0.0, "it": 0}

    class Progress(Callback):
        def on_batch_begin(self, net, batch=None, training=False, **kw):
            if training:
                state["p"] = state["it"] / total
                state["it"] += 1

    common = dict(
        batch_size=b,
        max_epochs=epochs,
        train_split=None,
        verbose=0,
        device="cpu",
        optimizer=torch.optim.SGD,
        lr=0.01,
        optimizer__momentum=0.9,
        optimizer__nesterov=True,
        optimizer__weight_decay=0.0,
        optimizer__param_groups=[
            ("*lin*.weight", {"weight_decay": 1e-3}),
            ("*head.weight", {"weight_decay": 1e-3}),
        ],
        callbacks=[
            Progress(),
            LRScheduler(
                policy=torch.optim.lr_scheduler.LambdaLR,
                lr_lambda=lambda t: (1 + 10 * t / total) ** -0.75,
                step_every="batch",
            ),
        ],
    )
    module = copy.deepcopy(net)
    z = 256
    if method == "source":
        est = SourceOnly(module, layer_name="g", **common)
    elif method == "dann":
        est = DANN(
            module,
            layer_name="g",
            reg=1,
            domain_classifier=discriminator(z, state, disc_init),
            **common,
        )
    elif method == "cdan":
        est = CDAN(
            module,
            layer_name="g",
            reg=1,
            n_classes=c,
            domain_classifier=discriminator(z * c, state, disc_init),
            **common,
        )
    elif method == "dan":
        est = DAN(module, layer_name="g", reg=1, **common)
    elif method == "coral":
        est = DeepCoral(module, layer_name="g", reg=1, **common)
    else:
        raise ValueError(method)
    torch.manual_seed(seed)
    X = np.concatenate([xs, xt]).astype(np.float32)
    y = np.concatenate([ys, -np.ones(len(xt), dtype=np.int64)])
    dom = np.concatenate([np.ones(len(xs), dtype=np.int64), -2 * np.ones(len(xt), dtype=np.int64)])
    est.fit(X, y, sample_domain=dom)
    return est, state["it"]


def accuracy(est_or_net, xt, yt):
    import torch

    if isinstance(est_or_net, torch.nn.Module):
        est_or_net.eval()
        with torch.no_grad():
            pred = est_or_net(torch.as_tensor(xt)).argmax(1).numpy()
    else:
        pred = est_or_net.predict(
            xt.astype(np.float32), sample_domain=-2 * np.ones(len(xt), dtype=np.int64)
        )
    return float((pred == yt).mean())


def run_task(args, src, tgt, seed, methods, out_runs):
    import torch

    torch.set_num_threads(1)
    xs_all, ys_all = load(args.data, src)
    xt, yt = load(args.data, tgt)
    xs_all, xt = zscore(xs_all, xt)
    tr, ho = stratified_holdout(ys_all, 0.2, seed)
    xs, ys = xs_all[tr], ys_all[tr]
    c = int(ys_all.max()) + 1
    pre = None
    for m in methods:
        path = out_runs / f"{m}__{src}__{tgt}__seed{seed}.json"
        if path.exists():
            continue
        t0 = time.time()
        if pre is None:
            pre, pre_iters = pretrain(xs, ys, xs_all[ho], ys_all[ho], c, seed)
        rec = {"method": m, "source": src, "target": tgt, "seed": seed}
        if m == "pretrained":
            rec.update(accuracy=accuracy(pre, xt, yt), iterations=pre_iters)
        else:
            est, iters = skada_fit(m, pre, xs, ys, xt, seed, args.iterations, c, args.disc_init)
            rec.update(accuracy=accuracy(est, xt, yt), iterations=iters)
            trained = est.module_.base_module_
            set_bn_stats(trained, xs)
            rec["accuracy_source_bn"] = accuracy(trained, xt, yt)
        rec["seconds"] = time.time() - t0
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(rec))
        tmp.replace(path)
        print(
            f"{m:10s} {src}->{tgt} seed {seed}: {100 * rec['accuracy']:.1f} "
            f"({rec['iterations']} it, {rec['seconds']:.0f} s)",
            flush=True,
        )


def glshift_records(folders):
    out = {}
    for f in folders:
        for p in sorted(Path(f, "runs").glob("uda__*.json")):
            if p.name.endswith(".failed.json"):  # diverged: no accuracy (its cell stays empty)
                continue
            r = json.loads(p.read_text())
            out[(r["method"], r["source"], r["target"], r["seed"])] = r["target_accuracy"]
    return out


def cell(vals):
    if not vals:
        return "–"
    v = 100 * np.array(vals)
    return f"{v.mean():.1f}" if len(v) == 1 else f"{v.mean():.1f} ± {v.std():.1f}"


def table(args, tasks, seeds, methods, out_runs):
    gl = glshift_records(args.glshift)
    sk = {}
    for p in out_runs.glob("*.json"):
        r = json.loads(p.read_text())
        sk[(r["method"], r["source"], r["target"], r["seed"])] = r

    def short(t):
        return f"{t[0][0].upper()}→{t[1][0].upper()}"

    print("| method | impl | " + " | ".join(short(t) for t in tasks) + " | Avg |")
    print("|---|---|" + "---|" * (len(tasks) + 1))
    rows = [
        ("skada", lambda m, t, s: sk.get((m, *t, s), {}).get("accuracy")),
        ("skada·bn", lambda m, t, s: sk.get((m, *t, s), {}).get("accuracy_source_bn")),
        ("glshift", lambda m, t, s: gl.get((m, *t, s))),
    ]
    for m in methods:
        for impl, get in rows:
            if (impl == "skada·bn" and m == "pretrained") or (
                impl == "glshift" and m == "pretrained"
            ):
                continue
            per_task = [[v for s in seeds if (v := get(m, t, s)) is not None] for t in tasks]
            complete = all(len(v) == len(seeds) for v in per_task)
            avg = [float(np.mean([get(m, t, s) for t in tasks])) for s in seeds] if complete else []
            print(
                f"| {m} | {impl} | " + " | ".join(cell(v) for v in per_task) + f" | {cell(avg)} |"
            )


def main():
    args = parse_args()
    tasks = (
        [tuple(t.split(":")) for t in args.tasks.split(",")]
        if args.tasks
        else [(s, t) for s in DOMAINS for t in DOMAINS if s != t]
    )
    seeds = [int(s) for s in args.seeds.split(",")]
    methods = args.methods.split(",")
    for m in methods:
        if m not in METHODS:
            sys.exit(f"unknown method {m!r}; known: {', '.join(METHODS)}")
    out_runs = args.out / "runs"
    out_runs.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    for seed in seeds:
        for src, tgt in tasks:
            run_task(args, src, tgt, seed, methods, out_runs)
    print(f"\nwall time {time.time() - t0:.0f} s for this call\n")
    table(args, tasks, seeds, methods, out_runs)


if __name__ == "__main__":
    main()
