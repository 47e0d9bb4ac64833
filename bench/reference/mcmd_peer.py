#!/usr/bin/env python3
"""Python-stack peers of `glshift perf`.

Computes the same J_TU + pooled J_DU loss and gradients (see mcmd-math.md) on the input that
`glshift perf --peers` writes (zs.npy, ys.npy, zt.npy, yt.npy, prior.npy, meta.json), the way a
user of the Python stack would:

- numpy: hand-written, dense n x n kernel matrix K (f32, BLAS through numpy);
- jax: the same formulas with a dense K, gradients by jax.value_and_grad, jit-compiled (f32);
- dense_inverse: the paper's literal estimator with the n x n inverses (L + eps n I)^-1 and
  M = L~^-1 K L~^-1, gradients by JAX autodiff (the authors' code uses autograd).

Each peer is timed (median of --runs after one untimed warm-up/compile call) and compared with
our values and gradients (ours_*.npy, meta.json), and skipped with "would need N GB" when its
dense matrices would not fit in the available memory. Prints one JSON object on the last line.
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np


def load(d):
    def f(name):
        return np.load(os.path.join(d, name))

    with open(os.path.join(d, "meta.json")) as fh:
        meta = json.load(fh)
    return f("zs.npy"), f("ys.npy"), f("zt.npy"), f("yt.npy"), f("prior.npy"), meta


def basis_gram(kind, c):
    if kind.get("kind") == "gaussian":
        g = np.exp(-2.0 / kind["sigma"])
        return (1.0 - g) * np.eye(c) + g * np.ones((c, c))
    return np.eye(c)


def cme_w(y, eps, b):
    """W = (eps n I + B N)^-1 B in f64 (c x c)."""
    y = y.astype(np.float64)
    n, c = y.shape
    return np.linalg.solve(eps * n * np.eye(c) + b @ (y.T @ y), b)


def constants(ys, yt, prior, eps, b):
    """c x c pieces shared by the numpy and JAX peers (labels are constants)."""
    ws, wt = cme_w(ys, eps, b), cme_w(yt, eps, b)
    wp = cme_w(np.concatenate([ys, yt]), eps, b)
    mass = ys.sum(0) + yt.sum(0)
    act = (mass > 0).astype(np.float64)
    return ws, wt, wp, act


def mem_available():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 16 << 30


# ---------------------------------------------------------------- numpy, by hand
def numpy_peer(zs, ys, zt, yt, prior, h, eps, b):
    ws, wt, wp, act = constants(ys, yt, prior, eps, b)
    ns = zs.shape[0]
    z = np.concatenate([zs, zt])
    y = np.concatenate([ys, yt])
    sq = np.einsum("ij,ij->i", z, z)
    k = z @ z.T
    k *= -2.0
    k += sq[:, None]
    k += sq[None, :]
    np.maximum(k, 0.0, out=k)
    k *= np.float32(-1.0 / h)
    np.exp(k, out=k)
    kys = k[:, :ns] @ ys
    kyt = k[:, ns:] @ yt
    s_ss = (ys.T @ kys[:ns]).astype(np.float64)
    s_st = (ys.T @ kyt[:ns]).astype(np.float64)
    s_tt = (yt.T @ kyt[ns:]).astype(np.float64)
    g_ss, g_tt, g_st = ws.T @ s_ss @ ws, wt.T @ s_tt @ wt, ws.T @ s_st @ wt
    j_tu = float(np.sum(prior * (np.diag(g_ss) + np.diag(g_tt) - 2 * np.diag(g_st))))
    g_pp = wp.T @ (s_ss + s_st + s_st.T + s_tt) @ wp
    n_act = act.sum()
    j_du = float(2 * n_act * np.sum(act * np.diag(g_pp)) - 2 * act @ g_pp @ act)
    # Gradients: dl/dz_i = -(2/h) sum_j (A_ij + A_ji) K_ij (z_i - z_j), A = Y Gamma Y^T.
    dp = np.diag(prior)
    c = ys.shape[1]
    gam = np.zeros((2 * c, 2 * c))
    gss, gtt, gst = ws @ dp @ ws.T, wt @ dp @ wt.T, -2 * ws @ dp @ wt.T
    gam[:c, :c], gam[c:, c:] = gss + gss.T, gtt + gtt.T
    gam[:c, c:], gam[c:, :c] = gst, gst.T
    yhat = np.zeros((z.shape[0], 2 * c), dtype=np.float32)
    yhat[:ns, :c], yhat[ns:, c:] = ys, yt
    dg = 2 * n_act * np.diag(act) - 2 * np.outer(act, act)
    gdu = wp @ dg @ wp.T
    grads = []
    for left, mid, right in [(yhat, gam, yhat), (y, gdu + gdu.T, y)]:
        a = (left @ mid.astype(np.float32)) @ right.T
        a *= k
        g = np.float32(-2.0 / h) * (a.sum(1)[:, None] * z - a @ z)
        del a
        grads.append((g[:ns], g[ns:]))
    return j_tu, j_du, grads


# ---------------------------------------------------------------- JAX, dense K, autodiff
def jax_peer_fn():
    import jax
    import jax.numpy as jnp

    def losses(zs, zt, ys, yt, ws, wt, wp, prior, act, h):
        z = jnp.concatenate([zs, zt])
        ns = zs.shape[0]
        sq = jnp.sum(z * z, axis=1)
        k = jnp.exp(-jnp.maximum(sq[:, None] + sq[None, :] - 2 * z @ z.T, 0.0) / h)
        s_ss = ys.T @ k[:ns, :ns] @ ys
        s_st = ys.T @ k[:ns, ns:] @ yt
        s_tt = yt.T @ k[ns:, ns:] @ yt
        g_ss, g_tt, g_st = ws.T @ s_ss @ ws, wt.T @ s_tt @ wt, ws.T @ s_st @ wt
        j_tu = jnp.sum(prior * (jnp.diag(g_ss) + jnp.diag(g_tt) - 2 * jnp.diag(g_st)))
        g_pp = wp.T @ (s_ss + s_st + s_st.T + s_tt) @ wp
        n_act = jnp.sum(act)
        j_du = 2 * n_act * jnp.sum(act * jnp.diag(g_pp)) - 2 * act @ g_pp @ act
        return j_tu, j_du

    tu = jax.value_and_grad(lambda *a: losses(*a)[0], argnums=(0, 1))
    du = jax.value_and_grad(lambda *a: losses(*a)[1], argnums=(0, 1))
    return jax.jit(lambda *a: (tu(*a), du(*a)))


# ---------------------------------------------------------------- the paper's dense inverse
def dense_inverse_fn():
    import jax
    import jax.numpy as jnp

    def gram(za, zb, h):
        d2 = jnp.sum(za * za, 1)[:, None] + jnp.sum(zb * zb, 1)[None, :] - 2 * za @ zb.T
        return jnp.exp(-jnp.maximum(d2, 0.0) / h)

    def linv(y, b, eps):
        n = y.shape[0]
        return jnp.linalg.inv(eps * n * jnp.eye(n, dtype=y.dtype) + y @ b @ y.T)

    def losses(zs, zt, ys, yt, b, prior, act, eps, h):
        # M^{ab} = L~_a^-1 K^{ab} L~_b^-1, L_{y=k} = Y B e_k (paper, "Conditional Metric Operator").
        li_s, li_t = linv(ys, b, eps), linv(yt, b, eps)
        cs, ct = ys @ b, yt @ b
        m_ss = li_s @ gram(zs, zs, h) @ li_s
        m_tt = li_t @ gram(zt, zt, h) @ li_t
        m_st = li_s @ gram(zs, zt, h) @ li_t
        q = jnp.diag(cs.T @ m_ss @ cs) + jnp.diag(ct.T @ m_tt @ ct) - 2 * jnp.diag(cs.T @ m_st @ ct)
        j_tu = jnp.sum(prior * q)
        z, y = jnp.concatenate([zs, zt]), jnp.concatenate([ys, yt])
        li = linv(y, b, eps)
        cp = y @ b
        g = cp.T @ (li @ gram(z, z, h) @ li) @ cp
        n_act = jnp.sum(act)
        j_du = 2 * n_act * jnp.sum(act * jnp.diag(g)) - 2 * act @ g @ act
        return j_tu, j_du

    tu = jax.value_and_grad(lambda *a: losses(*a)[0], argnums=(0, 1))
    du = jax.value_and_grad(lambda *a: losses(*a)[1], argnums=(0, 1))
    return jax.jit(lambda *a: (tu(*a), du(*a)))


def unpack_jax(out):
    (j_tu, (gs, gt)), (j_du, (ds, dt)) = out
    return (
        float(j_tu),
        float(j_du),
        [(np.asarray(gs), np.asarray(gt)), (np.asarray(ds), np.asarray(dt))],
    )


def timed(call, runs):
    call()  # warm-up (and compilation for JAX)
    times = []
    result = None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, result


def compare(result, d, meta):
    j_tu, j_du, grads = result
    errs = [
        abs(j_tu - meta["ours_tu"]) / abs(meta["ours_tu"]),
        abs(j_du - meta["ours_du"]) / abs(meta["ours_du"]),
    ]
    for (gs, gt), name in zip(grads, ["tu", "du"], strict=False):
        for g, side in [(gs, "s"), (gt, "t")]:
            ours = np.load(os.path.join(d, f"ours_{name}_grad_{side}.npy")).astype(np.float64)
            scale = np.max(np.abs(ours))
            if scale > 0:
                errs.append(float(np.max(np.abs(np.asarray(g, dtype=np.float64) - ours)) / scale))
    return max(errs), j_tu, j_du


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--peers", default="numpy,jax,dense_inverse")
    ap.add_argument("--dense-inverse-max-n", type=int, default=4000)
    args = ap.parse_args()
    zs, ys, zt, yt, prior, meta = load(args.dir)
    h, eps = float(meta["h"]), float(meta["eps"])
    c = ys.shape[1]
    b = basis_gram(meta.get("label_kernel", {"kind": "linear"}), c)
    n = zs.shape[0] + zt.shape[0]
    avail = mem_available()
    out = {"n": n, "versions": {"python": sys.version.split()[0], "numpy": np.__version__}}
    try:
        out["versions"]["blas"] = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except Exception:  # noqa: BLE001 - informational only
        pass
    # Bytes each peer needs, from its n x n matrices (f32 unless noted).
    need = {
        "numpy": 4 * n * n * 3.5,  # K, A (reused), the matmul temporaries of the slices
        "jax": 4 * n * n * 6,  # K, distances, cotangents and fusion temporaries
        "dense_inverse": 4 * n * n * 12,  # inverses, M blocks, K blocks and their cotangents
    }
    errs = []
    for peer in args.peers.split(","):
        if need[peer] > 0.8 * avail:
            out[peer] = {"skipped": f"would need {need[peer] / 1e9:.0f} GB"}
            continue
        if peer == "dense_inverse" and n > args.dense_inverse_max_n:
            out[peer] = {"skipped": f"not run above n = {args.dense_inverse_max_n} (O(n^3))"}
            continue
        try:
            if peer == "numpy":

                def call():
                    return numpy_peer(zs, ys, zt, yt, prior, h, eps, b)
            else:
                import jax
                import jax.numpy as jnp

                out["versions"]["jax"] = jax.__version__

                def f32(a):
                    return jnp.asarray(a, dtype=jnp.float32)

                if peer == "jax":
                    ws, wt, wp, act = constants(ys, yt, prior, eps, b)
                    fn = jax_peer_fn()
                    a = [f32(v) for v in (zs, zt, ys, yt, ws, wt, wp, prior, act)] + [
                        jnp.float32(h)
                    ]
                else:
                    act = ((ys.sum(0) + yt.sum(0)) > 0).astype(np.float64)
                    fn = dense_inverse_fn()
                    a = [f32(v) for v in (zs, zt, ys, yt, b, prior, act)] + [
                        jnp.float32(eps),
                        jnp.float32(h),
                    ]

                def call(fn=fn, a=a):
                    return unpack_jax(jax.block_until_ready(fn(*a)))

            secs, times, result = timed(call, args.runs)
            entry = {"seconds": secs, "seconds_all": times}
            if "ours_tu" in meta:
                err, j_tu, j_du = compare(result, args.dir, meta)
                entry.update({"max_rel_err": err, "j_tu": j_tu, "j_du": j_du})
                errs.append(err)
            out[peer] = entry
        except ImportError as e:
            out[peer] = {"skipped": f"not installed ({e.name})"}
        except MemoryError:
            out[peer] = {"skipped": f"out of memory (would need about {need[peer] / 1e9:.0f} GB)"}
    if errs:
        out["max_rel_err"] = max(errs)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
