//! The rows of `glshift perf`'s exact-loss grid: each measurement runs in a child process (its
//! own peak RSS), and a row is formatted from the child's JSON object.

use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::{fmt_bytes, PerfArgs};

/// Runs `glshift perf --n ... --json` in a child process and parses its object.
pub(super) fn child(
    args: &PerfArgs,
    n: usize,
    c: usize,
    mcmd: &str,
    runs: usize,
    peers: bool,
) -> Result<Value> {
    let exe = std::env::current_exe().context("locating the glshift binary")?;
    let mut cmd = Command::new(exe);
    cmd.args(["perf", "--json", "--n", &n.to_string(), "--d", &args.d.to_string()])
        .args(["--c", &c.to_string(), "--mcmd", mcmd, "--runs", &runs.to_string()])
        .args(["--seed", &args.seed.to_string(), "--python", &args.python])
        .args(["--dense-inverse-max-n", &args.dense_inverse_max_n.to_string()]);
    if let Some(p) = &args.peer_script {
        cmd.arg("--peer-script").arg(p);
    }
    if peers {
        cmd.arg("--peers");
    }
    let out = cmd.output().context("running glshift perf child")?;
    if !out.status.success() {
        bail!("perf --n {n} --c {c} failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or("")).context("child output is not JSON")
}

/// The number under key `k` of a JSON object, if there is one.
pub(super) fn json_number(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// "1.23" seconds of a peer, its note, or "–".
fn peer_cell(m: &Value, peer: &str) -> (String, Option<f64>) {
    match m.get("peers").and_then(|p| p.get(peer)) {
        Some(p) => match json_number(p, "seconds") {
            Some(s) => (format!("{s:.3}"), Some(s)),
            None => (p.get("skipped").and_then(Value::as_str).unwrap_or("–").to_string(), None),
        },
        None => ("–".into(), None),
    }
}

/// One row of the exact-loss table from a child's measurement `m`.
pub(super) fn exact_row(m: &Value, n: usize, c: usize) -> String {
    let secs = json_number(m, "seconds").unwrap_or(f64::NAN);
    let (np_cell, np) = peer_cell(m, "numpy");
    let (jax_cell, jax) = peer_cell(m, "jax");
    let (di_cell, di) = peer_cell(m, "dense_inverse");
    let best = match (np, jax) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let agree = ["numpy", "jax", "dense_inverse"]
        .iter()
        .map(|peer| {
            m.get("peers")
                .and_then(|p| p.get(*peer))
                .and_then(|p| json_number(p, "max_rel_err"))
                .map_or("–".into(), |e| format!("{e:.0e}"))
        })
        .collect::<Vec<_>>()
        .join(" / ");
    format!(
        "| {n} | {c} | {secs:.3} | {:.0} | {:.2} | {} | {np_cell} | {jax_cell} | {di_cell} | {} | {} | {agree} | {:.1} |",
        json_number(m, "achieved_gflops").unwrap_or(f64::NAN),
        json_number(m, "flop_bound_ratio").unwrap_or(f64::NAN),
        m.get("peak_rss_bytes").and_then(Value::as_u64).map_or("n/a".into(), fmt_bytes),
        best.map_or("–".into(), |b| format!("{:.1}×", b / secs)),
        di.map_or("–".into(), |b| format!("{:.0}×", b / secs)),
        json_number(m, "load_avg_1m_before").unwrap_or(f64::NAN),
    )
}

/// The row at `--large-n` rows (65 classes, one run, no peers: what they would need).
pub(super) fn large_n_row(args: &PerfArgs) {
    let c = 65;
    match child(args, args.large_n, c, "exact", 1, false) {
        Ok(m) => {
            let n = args.large_n as f64;
            println!(
                "| {} | {c} | {:.1} | {:.0} | {:.2} | {} | would need {:.0} GB | would need {:.0} GB | – | – | – | – | {:.1} |",
                args.large_n,
                json_number(&m, "seconds").unwrap_or(f64::NAN),
                json_number(&m, "achieved_gflops").unwrap_or(f64::NAN),
                json_number(&m, "flop_bound_ratio").unwrap_or(f64::NAN),
                m.get("peak_rss_bytes").and_then(Value::as_u64).map_or("n/a".into(), fmt_bytes),
                // numpy: K, A and H (n×n f32); JAX: K, its cotangent and two temporaries.
                3.0 * 4.0 * n * n / 1e9,
                4.0 * 4.0 * n * n / 1e9,
                json_number(&m, "load_avg_1m_before").unwrap_or(f64::NAN),
            );
        }
        Err(e) => println!("| {} | {c} | failed: {e} |", args.large_n),
    }
}
