"""skada's shallow domain-adaptation methods (their defaults) next to glshift's MUL on the 12
Office-Caltech10 UDA tasks (EfficientNet-Lite2 features, npy layout), in one run.

    python bench/peers/skada_compare.py [--data ../shared/data/office_caltech10_effnetlite2]
        [--tasks amazon:webcam,dslr:amazon] [--methods mul,coral] [--seed 0] [--out table.md]

Prints, per task and method, target accuracy and seconds (fit + predict), then a Markdown
table (accuracy %, seconds) with the mean over the tasks that ran. Every method sees the
source rows with labels and the target rows without (skada's sample_domain convention, target
labels masked to -1); target labels are read only to score. No choice depends on them: every
method runs with its defaults (skada: the estimator its constructor picks when none is given).

Preprocessing: the skada pipelines start with StandardScaler (shared over both domains, as in
skada's examples); the OT mappings add PCA to 100 components (the 1280-dimensional maps are
impractical); MUL preprocesses itself (z-score with source statistics, its default).
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

DOMAINS = ("amazon", "caltech", "dslr", "webcam")


def methods(seed):
    import skada
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    import glshift

    mk = skada.make_da_pipeline
    return {
        "source-lr": lambda: mk(StandardScaler(), LogisticRegression()),
        "coral": lambda: mk(StandardScaler(), skada.CORAL()),
        "linear-ot": lambda: mk(
            StandardScaler(), PCA(n_components=100, random_state=seed), skada.LinearOTMapping()
        ),
        "entropic-ot": lambda: mk(
            StandardScaler(), PCA(n_components=100, random_state=seed), skada.EntropicOTMapping()
        ),
        "sa": lambda: mk(StandardScaler(), skada.SubspaceAlignment(random_state=seed)),
        "kmm": lambda: mk(StandardScaler(), skada.KMMReweight()),
        "mmdtars": lambda: mk(StandardScaler(), skada.MMDTarSReweight()),
        "ot-labelprop": lambda: mk(StandardScaler(), skada.OTLabelProp()),
        "mul": lambda: glshift.MUL(seed=seed),
    }


def cell(r):
    acc, sec, err = r
    return f"{100 * acc:.1f} ({sec:.1f} s)" if err is None else f"fails ({sec:.1f} s)"


def markdown(tasks, names, results):
    ran = [(s, t) for s, t in tasks if all((s, t, n) in results for n in names)]
    lines = ["| task | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    for s, t in ran:
        lines.append(
            f"| {s[0].upper()}→{t[0].upper()} | "
            + " | ".join(cell(results[(s, t, n)]) for n in names)
            + " |"
        )
    if ran:
        means = []
        for n in names:
            rs = [results[(s, t, n)] for s, t in ran]
            ok = [r for r in rs if r[2] is None]
            acc = (
                f"**{100 * np.mean([r[0] for r in ok]):.1f}**"
                if len(ok) == len(rs)
                else f"{len(rs) - len(ok)} of {len(rs)} fail"
            )
            means.append(f"{acc} ({np.mean([r[1] for r in rs]):.1f} s)")
        lines.append(f"| mean ({len(ran)} tasks) | " + " | ".join(means) + " |")
    errors = sorted(
        {f"{n}: {results[(s, t, n)][2]}" for s, t in ran for n in names if results[(s, t, n)][2]}
    )
    return "\n".join(lines + ([""] + [f"- {e}" for e in errors] if errors else []))


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--data",
        default=str(
            Path(__file__).resolve().parents[3] / "shared/data/office_caltech10_effnetlite2"
        ),
    )
    ap.add_argument("--tasks", default=None, help="source:target,... (default: all 12)")
    ap.add_argument("--methods", default=None, help="comma-separated (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    a = ap.parse_args()

    data = Path(a.data)
    if not data.is_dir():
        print(f"SKIPPED: {data} is absent")
        return 0
    tasks = (
        [tuple(t.split(":")) for t in a.tasks.split(",")]
        if a.tasks
        else [(s, t) for s in DOMAINS for t in DOMAINS if s != t]
    )
    table = methods(a.seed)
    names = a.methods.split(",") if a.methods else list(table)
    load = lambda d: (np.load(data / f"{d}_features.npy"), np.load(data / f"{d}_labels.npy"))  # noqa: E731
    results = {}
    for s, t in tasks:
        (xs, ys), (xt, yt) = load(s), load(t)
        X = np.vstack([xs, xt]).astype(np.float64)
        y = np.concatenate([ys, -np.ones(len(yt), dtype=ys.dtype)])  # target labels masked
        sd = np.concatenate([np.ones(len(ys), dtype=int), -2 * np.ones(len(yt), dtype=int)])
        for name in names:
            est = table[name]()
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(X, y, sample_domain=sd)
                    pred = est.predict(
                        xt.astype(np.float64), sample_domain=-2 * np.ones(len(yt), dtype=int)
                    )
                acc, err = float(np.mean(pred == yt)), None  # evaluation only
            except Exception as e:  # a method failing on a task is a result too
                acc, err = None, f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
            sec = time.perf_counter() - t0
            results[(s, t, name)] = (acc, sec, err)
            shown = f"accuracy {100 * acc:6.2f}%" if err is None else f"FAILED ({err})"
            print(f"{s[0].upper()}->{t[0].upper()} {name:>13}: {shown}  {sec:8.1f} s", flush=True)
        md = markdown(tasks, names, results)
        if a.out:
            Path(a.out).write_text(md + "\n")  # after every task: a partial run keeps its rows
    print(
        "\naccuracy % on the target (seconds for fit + predict)\n" + markdown(tasks, names, results)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
