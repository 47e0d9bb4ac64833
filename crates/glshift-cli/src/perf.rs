//! `glshift perf`: times one J_TU + J_DU loss and gradient (the O(n²) part of a MUL iteration)
//! on seeded synthetic data, against the FLOP bound and against the Python stack.
//!
//! With `--n`: one measurement (`--json`: one JSON object). Without: the default grid — each
//! size in a child process of its own, so that each peak RSS is that size's — then the
//! 207 000-row exact run, random-feature errors and times, and one MUL iteration on
//! Office-Caltech10 when the data folder exists.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use glshift::kernel::workload::Workload;
use glshift::kernel::{self, DuRows, Labelled, McmdEstimator, McmdParams, MulObjectives};
use serde::Serialize;
use serde_json::Value;

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
    /// Office-Caltech10 features for the random-feature error and the MUL iteration time.
    #[arg(long, default_value = "../shared/data/office_caltech10_effnetlite2")]
    pub data: PathBuf,
}

/// One measurement (the `--json` object).
#[derive(Serialize, Debug, Clone)]
pub struct Measurement {
    pub n: usize,
    pub n_source: usize,
    pub n_target: usize,
    pub d: usize,
    pub c: usize,
    pub mcmd: String,
    pub seed: u64,
    pub runs: usize,
    /// Median of the timed runs.
    pub seconds: f64,
    pub seconds_all: Vec<f64>,
    /// VmHWM of this process after the timed runs (input, outputs and the work itself; the
    /// GEMM-rate measurement and the peers come after).
    pub peak_rss_bytes: Option<u64>,
    /// FLOPs of the algorithm (formula: `tiled::Plan::flops` / `kernel::rff::flops`).
    pub flops: f64,
    /// Best rate of faer's single-threaded 256×d·d×256 GEMM run on every thread at once.
    pub gemm_gflops: f64,
    /// seconds / (flops / gemm rate): 1 means as fast as pure GEMM at the same FLOP count.
    pub flop_bound_ratio: f64,
    pub achieved_gflops: f64,
    pub j_tu: f64,
    pub j_du: f64,
    pub threads: usize,
    pub load_avg_1m_before: Option<f64>,
    pub load_avg_1m_after: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peers: Option<Value>,
}

pub fn run(args: PerfArgs) -> Result<()> {
    let est: McmdEstimator = args.mcmd.parse()?;
    if args.runs == 0 {
        bail!("invalid parameter `--runs` = 0: at least one timed run is needed");
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

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let k = s.len();
    if k % 2 == 1 {
        s[k / 2]
    } else {
        0.5 * (s[k / 2 - 1] + s[k / 2])
    }
}

/// VmHWM of this process (Linux), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// 1-minute load average (Linux).
pub fn load_avg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// Best of three ~0.2 s trials of the tile GEMM shape 256×d·d×256 on all threads.
fn gemm_peak(d: usize) -> f64 {
    let threads = kernel::threads().max(1);
    let per = (2.0 * 256.0 * 256.0 * d as f64).max(1.0);
    let reps = ((4e10 / per) as usize / (threads * 4)).clamp(1, 200);
    (0..3).map(|_| kernel::tile_gemm_gflops(256, d, 256, threads * 4, reps)).fold(0.0, f64::max)
}

fn measure(args: &PerfArgs, n: usize, c: usize, est: McmdEstimator, peers: bool) -> Result<Measurement> {
    let load_before = load_avg();
    let w = Workload::synthetic(n, args.d, c, args.seed)?;
    let flops = w.flops(est)?;
    // Warm-up run; its values are reported and, with --peers, its gradients are written for
    // the peers before the timed runs (so that at most one set of gradients is alive).
    let first = w.evaluate(est)?;
    let (j_tu, j_du) = (first.tu.as_ref().expect("tu").value, first.du.as_ref().expect("du").value);
    let peer_dir = if peers { prepare_peers(args, &w, &first, est)? } else { None };
    drop(first);
    let mut times = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        let t0 = Instant::now();
        let r = w.evaluate(est)?;
        times.push(t0.elapsed().as_secs_f64());
        drop(std::hint::black_box(r));
    }
    let peak_rss = peak_rss_bytes();
    let seconds = median(&times);
    let gemm_gflops = gemm_peak(args.d);
    let (n_source, n_target) = (w.zs.nrows(), w.zt.nrows());
    drop(w);
    let mut peers = match peer_dir {
        Some(PeerInput::Dir(dir)) => Some(run_peers(args, &dir)?),
        Some(PeerInput::Skipped(v)) => Some(v),
        None => None,
    };
    // Each peer's time over ours, next to its own entry.
    if let Some(Value::Object(map)) = peers.as_mut() {
        for (_, v) in map.iter_mut() {
            if let Some(s) = f(v, "seconds") {
                v["ratio_to_ours"] = serde_json::json!(s / seconds);
            }
        }
    }
    Ok(Measurement {
        n,
        n_source,
        n_target,
        d: args.d,
        c,
        mcmd: est.to_string(),
        seed: args.seed,
        runs: args.runs,
        seconds,
        seconds_all: times,
        peak_rss_bytes: peak_rss,
        flops,
        gemm_gflops,
        flop_bound_ratio: seconds / (flops / (gemm_gflops * 1e9)),
        achieved_gflops: flops / seconds / 1e9,
        j_tu,
        j_du,
        threads: kernel::threads(),
        load_avg_1m_before: load_before,
        load_avg_1m_after: load_avg(),
        peers,
    })
}

fn print_measurement(m: &Measurement) {
    println!(
        "n = {} ({} + {}), d = {}, c = {}, {}: {:.4} s (median of {}), {:.1} GFLOP/s, GEMM {:.1} GFLOP/s, \
         FLOP-bound ratio {:.2}, peak RSS {}, J_TU = {:.6e}, J_DU = {:.6e}, load {}",
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
    );
    if let Some(p) = &m.peers {
        for peer in ["numpy", "jax", "dense_inverse"] {
            let Some(v) = p.get(peer) else { continue };
            match f(v, "seconds") {
                Some(s) => println!(
                    "  {peer}: {s:.4} s = {:.1}× ours; max relative difference to ours {:.1e}",
                    s / m.seconds,
                    f(v, "max_rel_err").unwrap_or(f64::NAN)
                ),
                None => println!("  {peer}: {}", v.get("skipped").and_then(Value::as_str).unwrap_or("not run")),
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

fn peer_script(args: &PerfArgs) -> PathBuf {
    if let Some(p) = &args.peer_script {
        return p.clone();
    }
    let local = PathBuf::from("bench/reference/mcmd_peer.py");
    if local.exists() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/reference/mcmd_peer.py")
}

/// Whether `python` runs and imports numpy.
fn python_with_numpy(python: &str) -> bool {
    Command::new(python)
        .args(["-c", "import numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The peers' input folder, or why the peers do not run.
enum PeerInput {
    Dir(TempDir),
    Skipped(Value),
}

/// Writes the input and our results for the peer script.
fn prepare_peers(args: &PerfArgs, w: &Workload, ours: &kernel::TuDuGrad<f32>, est: McmdEstimator) -> Result<Option<PeerInput>> {
    if est != McmdEstimator::Exact {
        bail!("the Python peers compute the exact objectives: use --mcmd exact with --peers");
    }
    if !python_with_numpy(&args.python) {
        return Ok(Some(PeerInput::Skipped(
            serde_json::json!({ "skipped": format!("{} with numpy not available", args.python) }),
        )));
    }
    let dir = tempfile_dir()?;
    w.write_npy(dir.path(), Some(ours))?;
    Ok(Some(PeerInput::Dir(dir)))
}

/// Runs the peer script on the prepared folder, returns its JSON.
fn run_peers(args: &PerfArgs, dir: &TempDir) -> Result<Value> {
    let script = peer_script(args);
    let out = Command::new(&args.python)
        .arg(&script)
        .arg("--dir")
        .arg(dir.path())
        .args(["--runs", &args.runs.to_string()])
        .args(["--dense-inverse-max-n", &args.dense_inverse_max_n.to_string()])
        .output()
        .with_context(|| format!("running {} {}", args.python, script.display()))?;
    if !out.status.success() {
        bail!(
            "peer script {} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().ok_or_else(|| anyhow!("peer script printed nothing"))?;
    serde_json::from_str(last).context("peer script output is not JSON")
}

/// A temporary folder removed on drop (std only).
struct TempDir(PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir() -> Result<TempDir> {
    let base = std::env::temp_dir().join(format!("glshift-perf-{}", std::process::id()));
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    Ok(TempDir(base))
}

/// Runs `glshift perf --n ... --json` in a child process and parses its object.
fn child(args: &PerfArgs, n: usize, c: usize, mcmd: &str, runs: usize, peers: bool) -> Result<Value> {
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

fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// "1.23" seconds of a peer, its note, or "–".
fn peer_cell(m: &Value, peer: &str) -> (String, Option<f64>) {
    match m.get("peers").and_then(|p| p.get(peer)) {
        Some(p) => match f(p, "seconds") {
            Some(s) => (format!("{s:.3}"), Some(s)),
            None => (
                p.get("skipped").and_then(Value::as_str).unwrap_or("–").to_string(),
                None,
            ),
        },
        None => ("–".into(), None),
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
        println!("Python peers: not run ({}).", if args.no_peers { "--no-peers" } else { "python3 with numpy not found" });
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
            let secs = f(&m, "seconds").unwrap_or(f64::NAN);
            let (np_cell, np) = peer_cell(&m, "numpy");
            let (jax_cell, jax) = peer_cell(&m, "jax");
            let (di_cell, di) = peer_cell(&m, "dense_inverse");
            let best = match (np, jax) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let agree = ["numpy", "jax", "dense_inverse"]
                .iter()
                .map(|peer| {
                    m.get("peers")
                        .and_then(|p| p.get(*peer))
                        .and_then(|p| f(p, "max_rel_err"))
                        .map_or("–".into(), |e| format!("{e:.0e}"))
                })
                .collect::<Vec<_>>()
                .join(" / ");
            println!(
                "| {n} | {c} | {secs:.3} | {:.0} | {:.2} | {} | {np_cell} | {jax_cell} | {di_cell} | {} | {} | {agree} | {:.1} |",
                f(&m, "achieved_gflops").unwrap_or(f64::NAN),
                f(&m, "flop_bound_ratio").unwrap_or(f64::NAN),
                m.get("peak_rss_bytes").and_then(Value::as_u64).map_or("n/a".into(), fmt_bytes),
                best.map_or("–".into(), |b| format!("{:.1}×", b / secs)),
                di.map_or("–".into(), |b| format!("{:.0}×", b / secs)),
                f(&m, "load_avg_1m_before").unwrap_or(f64::NAN),
            );
        }
    }
    if args.large_n > 0 {
        let c = 65;
        match child(args, args.large_n, c, "exact", 1, false) {
            Ok(m) => {
                let n = args.large_n as f64;
                println!(
                    "| {} | {c} | {:.1} | {:.0} | {:.2} | {} | would need {:.0} GB | would need {:.0} GB | – | – | – | – | {:.1} |",
                    args.large_n,
                    f(&m, "seconds").unwrap_or(f64::NAN),
                    f(&m, "achieved_gflops").unwrap_or(f64::NAN),
                    f(&m, "flop_bound_ratio").unwrap_or(f64::NAN),
                    m.get("peak_rss_bytes").and_then(Value::as_u64).map_or("n/a".into(), fmt_bytes),
                    // numpy: K, A and H (n×n f32); JAX: K, its cotangent and two temporaries.
                    3.0 * 4.0 * n * n / 1e9,
                    4.0 * 4.0 * n * n / 1e9,
                    f(&m, "load_avg_1m_before").unwrap_or(f64::NAN),
                );
            }
            Err(e) => println!("| {} | {c} | failed: {e} |", args.large_n),
        }
    }
    rff_tables(args)?;
    mul_iteration(args)?;
    println!("\n1-minute load average at the end: {}", load_avg().map_or("n/a".into(), |l| format!("{l:.2}")));
    Ok(())
}

fn rff_tables(args: &PerfArgs) -> Result<()> {
    println!("\n### Random features: relative error against the exact J_TU and J_DU\n");
    let sets = office_caltech_sets(&args.data)?;
    if sets.is_empty() {
        println!("Office-Caltech10 features not found at {}: skipped.", args.data.display());
    }
    let mut synthetic = Workload::synthetic(20_000, args.d, 65, args.seed)?;
    synthetic.prior = vec![1.0 / 65.0; 65];
    let mut rows: Vec<(String, RffInput)> = sets;
    rows.push((
        format!("synthetic n = 20000, d = {}, c = 65", args.d),
        RffInput {
            zs: synthetic.zs.clone(),
            ys: synthetic.ys.clone(),
            zt: synthetic.zt.clone(),
            yt: synthetic.yt.clone(),
            prior: synthetic.prior.clone(),
            params: synthetic.params,
            h: synthetic.h,
        },
    ));
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
        let s = f(&m, "seconds").unwrap_or(f64::NAN);
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

/// Inputs of the random-feature error measurement.
struct RffInput {
    zs: ndarray::Array2<f32>,
    ys: ndarray::Array2<f32>,
    zt: ndarray::Array2<f32>,
    yt: ndarray::Array2<f32>,
    prior: Vec<f64>,
    params: McmdParams,
    h: f64,
}

impl RffInput {
    /// ((J_TU, J_DU), seconds) with the pooled J_DU.
    fn eval(&self, est: McmdEstimator) -> Result<((f64, f64), f64)> {
        let (s, t) = (Labelled::new(self.zs.view(), self.ys.view()), Labelled::new(self.zt.view(), self.yt.view()));
        let spec = MulObjectives { prior: Some(&self.prior), du: Some(DuRows::Pooled), du_active: None, estimator: est };
        let t0 = Instant::now();
        let r = kernel::j_tu_du(&s, &t, &spec, &self.params, self.h)?;
        let secs = t0.elapsed().as_secs_f64();
        Ok(((r.tu.expect("tu").value, r.du.expect("du").value), secs))
    }
}

fn one_hot(labels: &[usize], c: usize) -> ndarray::Array2<f32> {
    let mut y = ndarray::Array2::zeros((labels.len(), c));
    for (i, &k) in labels.iter().enumerate() {
        y[[i, k]] = 1.0;
    }
    y
}

/// Office-Caltech10 A→W and C→A: z-scored features (source statistics), source labels,
/// target pseudo-labels from the nearest source class mean (target labels are not read),
/// prior = the pseudo-labels' class proportions, ε = 0.01/c, linear label kernel.
fn office_caltech_sets(dir: &Path) -> Result<Vec<(String, RffInput)>> {
    if !dir.join("amazon_features.npy").exists() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (s_name, t_name) in [("amazon", "webcam"), ("caltech", "amazon")] {
        let (src, tgt) = glshift::data::load_pair(dir, s_name, t_name)?;
        let c = src.n_classes();
        let (mut xs, mut xt) = (src.features.clone(), tgt.features.clone());
        glshift::data::preprocess(&mut xs, &mut xt, glshift::data::Preprocess::ZScore)?;
        let ls = src.labels.clone().ok_or_else(|| anyhow!("{s_name} has no labels"))?;
        let mut means = ndarray::Array2::<f32>::zeros((c, xs.ncols()));
        let mut counts = vec![0f32; c];
        for (row, &k) in xs.rows().into_iter().zip(&ls) {
            let mut m = means.row_mut(k);
            m += &row;
            counts[k] += 1.0;
        }
        for (mut m, &cnt) in means.rows_mut().into_iter().zip(&counts) {
            m /= cnt.max(1.0);
        }
        let pseudo: Vec<usize> = xt
            .rows()
            .into_iter()
            .map(|row| {
                (0..c)
                    .min_by(|&a, &b| {
                        let da = (&row - &means.row(a)).mapv(|v| v * v).sum();
                        let db = (&row - &means.row(b)).mapv(|v| v * v).sum();
                        da.total_cmp(&db)
                    })
                    .expect("c >= 1")
            })
            .collect();
        let prior = glshift::label_shift::class_prior(&pseudo, c)?;
        let h = kernel::bandwidth(&[xs.view(), xt.view()], 1.0)?;
        out.push((
            format!("Office-Caltech10 {s_name}→{t_name} (d = {})", xs.ncols()),
            RffInput {
                ys: one_hot(&ls, c),
                yt: one_hot(&pseudo, c),
                zs: xs,
                zt: xt,
                prior,
                params: McmdParams { eps: 0.01 / c as f64, label_kernel: kernel::LabelKernel::Linear },
                h,
            },
        ));
        out.push(network_z_set(&src, &tgt, s_name, t_name)?);
    }
    Ok(out)
}

/// The representation MUL's kernel actually sees: Z = G(x) of a network pre-trained on the
/// source (`source` method, default settings, seed 0), source labels, target pseudo-labels =
/// that network's predictions (target labels are not read), prior = their proportions, the
/// bandwidth rule of `mul` (multiplier 1) and ε = 0.01/c.
fn network_z_set(
    src: &glshift::data::Domain,
    tgt: &glshift::data::Domain,
    s_name: &str,
    t_name: &str,
) -> Result<(String, RffInput)> {
    let cfg = glshift::methods::FitConfig { method: glshift::methods::MethodKind::Source, ..Default::default() };
    let run = glshift::pipeline::run(src, tgt, &cfg, &mut |_| {})?;
    let c = src.n_classes();
    let pseudo = run.predictions();
    let prior = glshift::label_shift::class_prior(&pseudo, c)?;
    let h = kernel::bandwidth(&[run.source_z.view(), run.target_z.view()], 1.0)?;
    Ok((
        format!("Office-Caltech10 {s_name}→{t_name}, network Z (d = {})", run.source_z.ncols()),
        RffInput {
            ys: one_hot(&run.source_labels, c),
            yt: one_hot(&pseudo, c),
            zs: run.source_z,
            zt: run.target_z,
            prior,
            params: McmdParams { eps: 0.01 / c as f64, label_kernel: kernel::LabelKernel::Linear },
            h,
        },
    ))
}

/// Median time of one MUL adaptation iteration (forward, BBSE-QP, MUL terms, backward, AdamW)
/// on Office-Caltech10 amazon→webcam with the default configuration (pre-training shortened to
/// 50 iterations, 12 adaptation iterations timed from the progress callback).
fn mul_iteration(args: &PerfArgs) -> Result<()> {
    println!("\n### One MUL adaptation iteration on Office-Caltech10\n");
    if !args.data.join("amazon_features.npy").exists() {
        println!("Office-Caltech10 features not found at {}: skipped.", args.data.display());
        return Ok(());
    }
    let (src, tgt) = glshift::data::load_pair(&args.data, "amazon", "webcam")?;
    let cfg = glshift::methods::FitConfig { pretrain_iters: 50, adapt_iters: 12, ..Default::default() };
    let mut stamps: Vec<f64> = Vec::new();
    let t0 = Instant::now();
    glshift::pipeline::run(&src, &tgt, &cfg, &mut |p| {
        if p.stage == glshift::methods::Stage::Adapt {
            stamps.push(t0.elapsed().as_secs_f64());
        }
    })?;
    let gaps: Vec<f64> = stamps.windows(2).map(|w| w[1] - w[0]).collect();
    if gaps.is_empty() {
        println!("no adaptation iteration was recorded");
    } else {
        println!(
            "amazon→webcam ({} + {} rows, d = {}, hidden {:?}): {:.1} ms per adaptation iteration (median of {}), load {}",
            src.n(),
            tgt.n(),
            src.dim(),
            cfg.network.hidden,
            1e3 * median(&gaps),
            gaps.len(),
            load_avg().map_or("n/a".into(), |l| format!("{l:.2}"))
        );
    }
    Ok(())
}
