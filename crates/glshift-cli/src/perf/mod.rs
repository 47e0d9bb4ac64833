//! `glshift perf`: times one J_TU + J_DU loss and gradient (the O(n²) part of a MUL iteration)
//! on seeded synthetic data, against the FLOP bound and against the Python stack. The
//! workloads and timings are `glshift_experiments::perf`'s; this file runs the Python peers and
//! the child processes of the grid, and prints.
//!
//! With `--n`: one measurement (`--json`: one JSON object). Without: the default grid — each
//! size in a child process of its own, so that each peak RSS is that size's — then the
//! 207 000-row exact run, random-feature errors and times, and one MUL iteration on
//! Office-Caltech10 when the data folder exists.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use glshift::device::Device;
use glshift::kernel::{self, McmdEstimator};
use glshift_experiments::perf::rff::{office_caltech_sets, RffInput};
use glshift_experiments::perf::{self, load_avg, MeasureSpec, Measurement};
use serde_json::Value;

mod grid_rows;
mod host;
mod peers;
use grid_rows::{child, exact_row, json_number, large_n_row};
use peers::{prepare_peers, python_with_numpy, run_peers, PeerInput};

#[derive(Args, Debug, Clone)]
pub struct PerfArgs {
    /// Total rows (half source, half target). Without it the default grid runs.
    #[arg(long)]
    pub n: Option<usize>,
    /// Feature dimension.
    #[arg(long, default_value_t = 256)]
    pub d: usize,
    /// Classes (used with --n; the grid uses --grid-c).
    #[arg(long, default_value_t = 65)]
    pub c: usize,
    /// `exact` or `random-features:R`.
    #[arg(long, default_value = "exact")]
    pub mcmd: String,
    /// Timed runs (the median is reported), after one untimed warm-up run.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Seed of the synthetic data.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print one JSON object (with --n).
    #[arg(long)]
    pub json: bool,
    /// Also run the Python peers (numpy, JAX, dense inverse) on the same input (with --n;
    /// the grid runs them unless --no-peers).
    #[arg(long)]
    pub peers: bool,
    /// Grid: do not run the Python peers.
    #[arg(long)]
    pub no_peers: bool,
    /// Python interpreter for the peers.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// The peer script (default: bench/reference/mcmd_peer.py of this repository).
    #[arg(long)]
    pub peer_script: Option<PathBuf>,
    /// Largest n at which the dense-inverse peer runs (its time grows as n³).
    #[arg(long, default_value_t = 4000)]
    pub dense_inverse_max_n: usize,
    /// Grid: sizes n.
    #[arg(long, value_delimiter = ',', default_value = "2000,4000,8000,20000,50000")]
    pub grid_n: Vec<usize>,
    /// Grid: class counts.
    #[arg(long, value_delimiter = ',', default_value = "10,65")]
    pub grid_c: Vec<usize>,
    /// Grid: rows of the exact peak-memory run (0 skips it).
    #[arg(long, default_value_t = 207_000)]
    pub large_n: usize,
    /// Grid: feature counts r of the random-feature error table.
    #[arg(long, value_delimiter = ',', default_value = "256,512,1024,2048,4096,8192")]
    pub rff_r: Vec<usize>,
    /// Grid: sizes n of the random-feature timing (r = 2048), to check linear time.
    #[arg(long, value_delimiter = ',', default_value = "20000,50000,100000,200000")]
    pub rff_n: Vec<usize>,
    /// Where the kernel sums of `--n` run: `cpu`, `cuda` (an error without a usable GPU) or
    /// `auto`. The FLOP count and GEMM rate stay the CPU's (the ratio compares a GPU's time
    /// with the CPU's bound). The grid runs on the CPU.
    #[arg(long, value_parser = crate::core_values::parser::<Device>(), default_value = Device::Cpu.name())]
    pub device: Device,
    /// With `--device cuda`: allow cuBLAS TF32 tensor-core products (10-bit mantissa inputs,
    /// f32 sums), to measure their speed and the values they give. No fit uses them.
    #[arg(long)]
    pub tf32: bool,
    /// Instead of the kernel sums: time the host's share of one full-batch iteration (the calls
    /// on the logits, `perf/host.rs`) at SOURCE,TARGET rows and `--c` classes.
    #[arg(long, value_delimiter = ',', num_args = 1, value_names = ["SOURCE,TARGET"])]
    pub host_iteration: Option<Vec<usize>>,
    /// Office-Caltech10 features for the random-feature error and the MUL iteration time.
    #[arg(long, default_value = "../shared/data/office_caltech10_effnetlite2")]
    pub data: PathBuf,
}

pub fn run(args: PerfArgs) -> Result<()> {
    if let Some(rows) = &args.host_iteration {
        return host::run(&args, rows);
    }
    let est: McmdEstimator = args.mcmd.parse()?;
    if args.runs == 0 {
        bail!("invalid parameter `--runs` = 0: at least one timed run is needed");
    }
    if args.n.is_none() && args.device != Device::Cpu {
        bail!("--device applies to one measurement (--n); the grid runs on the CPU");
    }
    if args.tf32 && args.device != Device::Cuda {
        bail!("--tf32 needs --device cuda (TF32 is a mode of the GPU's products)");
    }
    match args.n {
        Some(n) => {
            let m = measure(&args, n, args.c, est, args.peers)?;
            if args.json {
                println!("{}", serde_json::to_string(&m)?);
            } else {
                print_measurement(&m);
            }
            Ok(())
        }
        None => grid(&args),
    }
}

fn measure(
    args: &PerfArgs,
    n: usize,
    c: usize,
    est: McmdEstimator,
    peers: bool,
) -> Result<Measurement> {
    let spec = MeasureSpec {
        n,
        d: args.d,
        c,
        seed: args.seed,
        runs: args.runs,
        estimator: est,
        device: args.device,
        tf32: args.tf32,
    };
    // The peers' input is written after the warm-up run, before the timed runs.
    let (mut m, peer_dir) = perf::measure(&spec, |w, first| -> Result<Option<PeerInput>> {
        if peers {
            prepare_peers(args, w, first, est)
        } else {
            Ok(None)
        }
    })?;
    m.peers = match peer_dir {
        Some(PeerInput::Dir(dir)) => Some(run_peers(args, &dir)?),
        Some(PeerInput::Skipped(v)) => Some(v),
        None => None,
    };
    // Each peer's time over ours, next to its own entry.
    let seconds = m.seconds;
    if let Some(Value::Object(map)) = m.peers.as_mut() {
        for (_, v) in map.iter_mut() {
            if let Some(s) = json_number(v, "seconds") {
                v["ratio_to_ours"] = serde_json::json!(s / seconds);
            }
        }
    }
    m.load_avg_1m_after = load_avg();
    Ok(m)
}

fn print_measurement(m: &Measurement) {
    println!(
        "n = {} ({} + {}), d = {}, c = {}, {}: {:.4} s (median of {}), {:.1} GFLOP/s, GEMM {:.1} GFLOP/s, \
         FLOP-bound ratio {:.2}, peak RSS {}, J_TU = {:.6e}, J_DU = {:.6e}, load {}, device {}",
        m.n,
        m.n_source,
        m.n_target,
        m.d,
        m.c,
        m.mcmd,
        m.seconds,
        m.runs,
        m.achieved_gflops,
        m.gemm_gflops,
        m.flop_bound_ratio,
        m.peak_rss_bytes.map_or("n/a".into(), fmt_bytes),
        m.j_tu,
        m.j_du,
        m.load_avg_1m_before.map_or("n/a".into(), |l| format!("{l:.2}")),
        crate::fit::device_line(&m.device) + if m.tf32 { ", TF32 products" } else { "" },
    );
    if let Some(p) = &m.peers {
        for peer in ["numpy", "jax", "dense_inverse"] {
            let Some(v) = p.get(peer) else { continue };
            match json_number(v, "seconds") {
                Some(s) => println!(
                    "  {peer}: {s:.4} s = {:.1}× ours; max relative difference to ours {:.1e}",
                    s / m.seconds,
                    json_number(v, "max_rel_err").unwrap_or(f64::NAN)
                ),
                None => println!(
                    "  {peer}: {}",
                    v.get("skipped").and_then(Value::as_str).unwrap_or("not run")
                ),
            }
        }
        if let Some(s) = p.get("skipped").and_then(Value::as_str) {
            println!("  peers skipped: {s}");
        }
        if let Some(v) = p.get("versions") {
            println!("  versions: {v}");
        }
    }
}

fn fmt_bytes(b: u64) -> String {
    let g = b as f64 / (1u64 << 30) as f64;
    if g >= 1.0 {
        format!("{g:.2} GiB")
    } else {
        format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64)
    }
}

fn grid(args: &PerfArgs) -> Result<()> {
    let load = load_avg();
    println!(
        "glshift perf: d = {}, seed {}, {} rayon threads, 1-minute load average at start {}",
        args.d,
        args.seed,
        kernel::threads(),
        load.map_or("n/a".into(), |l| format!("{l:.2}"))
    );
    if load.is_some_and(|l| l > 2.5) {
        println!("WARNING: the machine is loaded; timings below are not clean measurements.");
    }
    let peers = !args.no_peers && python_with_numpy(&args.python);
    if !peers {
        println!(
            "Python peers: not run ({}).",
            if args.no_peers { "--no-peers" } else { "python3 with numpy not found" }
        );
    }
    println!("\n### Exact J_TU + J_DU loss and gradient (median of {} runs, f32)\n", args.runs);
    println!(
        "| n | c | seconds | GFLOP/s | FLOP-bound ratio | peak RSS | numpy s | JAX s | dense-inverse s | faster of numpy/JAX ÷ ours | dense-inverse ÷ ours | max rel. difference to ours (numpy / JAX / dense-inverse) | load |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &c in &args.grid_c {
        for &n in &args.grid_n {
            let m = match child(args, n, c, "exact", args.runs, peers) {
                Ok(m) => m,
                Err(e) => {
                    println!("| {n} | {c} | failed: {e} |");
                    continue;
                }
            };
            println!("{}", exact_row(&m, n, c));
        }
    }
    if args.large_n > 0 {
        large_n_row(args);
    }
    rff_tables(args)?;
    mul_iteration(args)?;
    println!(
        "\n1-minute load average at the end: {}",
        load_avg().map_or("n/a".into(), |l| format!("{l:.2}"))
    );
    Ok(())
}

fn rff_tables(args: &PerfArgs) -> Result<()> {
    println!("\n### Random features: relative error against the exact J_TU and J_DU\n");
    let sets = office_caltech_sets(&args.data)?;
    if sets.is_empty() {
        println!("Office-Caltech10 features not found at {}: skipped.", args.data.display());
    }
    let mut rows: Vec<(String, RffInput)> = sets;
    rows.push(RffInput::synthetic(args.d, args.seed)?);
    println!("| data | r | rel. error J_TU | rel. error J_DU | seconds (r) | seconds (exact) |");
    println!("|---|---|---|---|---|---|");
    for (name, inp) in &rows {
        let (exact, t_exact) = inp.eval(McmdEstimator::Exact)?;
        for &r in &args.rff_r {
            let (approx, t) = inp.eval(McmdEstimator::RandomFeatures(r))?;
            println!(
                "| {name} | {r} | {:.2}% | {:.2}% | {t:.3} | {t_exact:.3} |",
                100.0 * (approx.0 - exact.0).abs() / exact.0.abs(),
                100.0 * (approx.1 - exact.1).abs() / exact.1.abs(),
            );
        }
    }
    println!("\n### Random features (r = 2048): time against n, d = {}, c = 65\n", args.d);
    println!("| n | seconds (median of 3) | seconds per 10⁵ rows | peak RSS |");
    println!("|---|---|---|---|");
    let mut base: Option<(usize, f64)> = None;
    let mut last: Option<(usize, f64)> = None;
    for &n in &args.rff_n {
        let m = child(args, n, 65, "random-features:2048", 3, false)?;
        let s = json_number(&m, "seconds").unwrap_or(f64::NAN);
        base.get_or_insert((n, s));
        last = Some((n, s));
        println!(
            "| {n} | {s:.3} | {:.3} | {} |",
            s / n as f64 * 1e5,
            m.get("peak_rss_bytes").and_then(Value::as_u64).map_or("n/a".into(), fmt_bytes)
        );
    }
    if let (Some((n0, s0)), Some((n1, s1))) = (base, last) {
        if n1 > n0 {
            println!(
                "\ntime ratio {:.2} for a size ratio {:.1}: {:.2}× of linear",
                s1 / s0,
                n1 as f64 / n0 as f64,
                (s1 / s0) / (n1 as f64 / n0 as f64)
            );
        }
    }
    Ok(())
}

/// One MUL adaptation iteration on Office-Caltech10 amazon→webcam (`perf::mul_iteration`).
fn mul_iteration(args: &PerfArgs) -> Result<()> {
    println!("\n### One MUL adaptation iteration on Office-Caltech10\n");
    let Some(it) = perf::mul_iteration(&args.data)? else {
        println!("Office-Caltech10 features not found at {}: skipped.", args.data.display());
        return Ok(());
    };
    if it.gaps == 0 {
        println!("no adaptation iteration was recorded");
    } else {
        println!(
            "amazon→webcam ({} + {} rows, d = {}, hidden {:?}): {:.1} ms per adaptation iteration (median of {}), load {}",
            it.n_source,
            it.n_target,
            it.dim,
            it.hidden,
            it.median_ms,
            it.gaps,
            load_avg().map_or("n/a".into(), |l| format!("{l:.2}"))
        );
    }
    Ok(())
}
