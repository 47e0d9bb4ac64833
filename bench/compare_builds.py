"""Compares the output trees of two glshift builds written by bench/compare_builds.sh."""

import filecmp
import json
import os
import re
import struct
import sys

BYTES = {"predictions.csv", "z_source.npy", "z_target.npy"}
MODELS = {"model.glshift"}
JSONS = {"report.json", "selection.json", "results.json"}
# Fields that measure time or say where a file lay: not results.
TIMING = {
    "elapsed_seconds",
    "seconds",
    "wall_seconds",
    "time_per_iteration_ms",
    "source_path",
    "target_path",
    "model",
}


# Keys the newer build writes under another name: (old key, new key) inside any `history`
# record, and the flat `[baselines]` keys now in each method's section. The old tree is
# rewritten to the new names before comparing, so a renamed value is still compared.
HISTORY_RENAMES = {"lambda_du": "lambda_du_applied"}
BASELINE_MOVES = {
    "training": ("schedule",),
    "grl_gamma": ("adversarial", "grl_gamma"),
    "discriminator_hidden": ("adversarial", "discriminator_hidden"),
    "discriminator_dropout": ("adversarial", "discriminator_dropout"),
    "cdan_max_multilinear_dim": ("cdan", "max_multilinear_dim"),
    "cdan_random_dim": ("cdan", "random_dim"),
    "pada_update_interval": ("pada", "update_interval"),
    "mk_kernels": ("mmd", "kernels"),
    "jan_prediction_bandwidth": ("jan", "prediction_bandwidth"),
}


def upgrade(v, renamed):
    """v with the keys of HISTORY_RENAMES and BASELINE_MOVES under their new names, at any
    depth; the old names met are added to `renamed`."""
    if isinstance(v, list):
        return [upgrade(x, renamed) for x in v]
    if not isinstance(v, dict):
        return v
    out = {k: upgrade(x, renamed) for k, x in v.items()}
    for key in ("history", "history_tail"):
        for rec in out.get(key) or []:
            for old, new in HISTORY_RENAMES.items():
                if isinstance(rec, dict) and old in rec and new not in rec:
                    rec[new] = rec.pop(old)
                    renamed.add(f"{key}[].{old} -> {new}")
    b = out.get("baselines")
    if isinstance(b, dict):
        for old, path in BASELINE_MOVES.items():
            if old in b:
                value = b.pop(old)
                target = b
                for part in path[:-1]:
                    target = target.setdefault(part, {})
                target[path[-1]] = value
                renamed.add(f"baselines.{old} -> baselines.{'.'.join(path)}")
    return out


def strip(v):
    """v without the timing fields, at any depth."""
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in TIMING}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def diff(a, b, path, out):
    """Paths where a and b differ; keys in one only are listed apart."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b:
                out["only_old"].add(f"{path}.{k}")
            elif k not in a:
                out["only_new"].add(f"{path}.{k}")
            else:
                diff(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out["differ"].append(path)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            out["largest"] = max(out.get("largest", (0.0, "")), (abs(a - b), path))


def read_model(path):
    """A model file (safetensors) as (tensor bytes, tensor table, info JSON): the checksum is
    left out, since it covers the info text, which gains fields in newer builds."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    meta = json.loads(header.pop("__metadata__")["glshift"])
    info = json.loads(meta.pop("info"))
    meta.pop("checksum", None)
    return raw[8 + n :], header, {"meta": meta, "info": info}


def main(old_root, new_root):
    same = differ = 0
    fields = {"only_old": set(), "only_new": set(), "differ": []}
    largest = (0.0, "")  # the largest absolute difference between two numbers, and where
    renamed = set()
    for root, _, files in sorted(os.walk(old_root)):
        rel = os.path.relpath(root, old_root)
        for f in sorted(files):
            a, b = os.path.join(root, f), os.path.join(new_root, rel, f)
            if f not in BYTES | JSONS | MODELS or "/runs" in a:
                continue
            if not os.path.exists(b):
                print(f"MISSING in new: {rel}/{f}")
                differ += 1
                continue
            if f in BYTES:
                ok = filecmp.cmp(a, b, shallow=False)
            else:
                d = {"only_old": set(), "only_new": set(), "differ": []}
                if f in MODELS:
                    (ta, ha, ia), (tb, hb, ib) = read_model(a), read_model(b)
                    if ta != tb:
                        d["differ"].append(f"{f}: tensor bytes")
                    diff(ha, hb, f + ".tensors", d)
                    diff(strip(upgrade(ia, renamed)), strip(ib), f, d)
                else:
                    old_json = upgrade(json.load(open(a)), renamed)
                    diff(strip(old_json), strip(json.load(open(b))), f, d)
                ok = not d["differ"]
                fields["only_old"] |= d["only_old"]
                fields["only_new"] |= d["only_new"]
                fields["differ"] += [f"{rel}/{p}" for p in d["differ"]]
                if "largest" in d:
                    largest = max(largest, (d["largest"][0], f"{rel}/{d['largest'][1]}"))
            same += ok
            differ += not ok
            print(f"{'same' if ok else 'DIFFERENT'}: {rel}/{f}")
    for k in ("only_old", "only_new"):
        if fields[k]:
            names = sorted({re.sub(r"\[\d+\]", "[]", f) for f in fields[k]})
            print(f"fields in the {k[5:]} build only (not compared): {', '.join(names)}")
    if renamed:
        names = ", ".join(sorted(renamed))
        print(f"renamed in the new build (compared under the new name): {names}")
    for p in fields["differ"][:40]:
        print(f"differs: {p}")
    if largest[1]:
        print(f"largest difference between two numbers: {largest[0]:.2e} at {largest[1]}")
    print(f"{same} files the same, {differ} different")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
