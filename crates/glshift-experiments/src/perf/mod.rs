//! The workloads and timings behind `glshift perf` (the CLI prints them): one J_TU + J_DU loss
//! and gradient on seeded synthetic data ([`Workload`], [`measure`]), the random-feature inputs
//! from Office-Caltech10 ([`rff`]), one MUL adaptation iteration ([`mul_iteration`]), and the
//! host's share of a full-batch iteration ([`host`]).

pub mod host;
pub mod rff;
mod workload;

use std::path::Path;
use std::time::Instant;

use glshift::config::FitConfig;
use glshift::device::{self, Device, DeviceUsed};
use glshift::kernel::{self, McmdEstimator, TuDuGrad};
use glshift::train::Stage;
use serde::Serialize;
use serde_json::Value;

use crate::{Error, Result};

pub use workload::Workload;

/// One measurement (the `glshift perf --json` object).
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
    /// Where the timed runs' kernel sums ran (the warm-up's and every timed run's scope).
    pub device: DeviceUsed,
    /// Whether the GPU's products were allowed TF32.
    pub tf32: bool,
    pub load_avg_1m_before: Option<f64>,
    pub load_avg_1m_after: Option<f64>,
    /// The Python peers' results (filled in by the caller that ran them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peers: Option<Value>,
}

/// What [`measure`] times.
#[derive(Clone, Copy, Debug)]
pub struct MeasureSpec {
    /// Total rows (half source, half target).
    pub n: usize,
    pub d: usize,
    pub c: usize,
    pub seed: u64,
    /// Timed runs (the median is reported), after one untimed warm-up run.
    pub runs: usize,
    pub estimator: McmdEstimator,
    /// Where the kernel sums run (`glshift::device::scoped`); the GEMM rate is the CPU's.
    pub device: Device,
    /// TF32 products on the GPU (`glshift::device::allowing_tf32`).
    pub tf32: bool,
}

/// Median of `v` (NaN-free input).
pub fn median(v: &[f64]) -> f64 {
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
pub fn gemm_peak(d: usize) -> f64 {
    let threads = kernel::threads().max(1);
    let per = (2.0 * 256.0 * 256.0 * d as f64).max(1.0);
    let reps = ((4e10 / per) as usize / (threads * 4)).clamp(1, 200);
    (0..3).map(|_| kernel::tile_gemm_gflops(256, d, 256, threads * 4, reps)).fold(0.0, f64::max)
}

/// Times the synthetic workload of `spec`. `after_warm_up` sees the workload and the warm-up
/// run's results before the timed runs (e.g. to write them for the Python peers; at most one
/// set of gradients is alive then); its value is returned beside the measurement, whose
/// `peers` is left empty. The workload is dropped before returning.
pub fn measure<P, E: From<Error>>(
    spec: &MeasureSpec,
    after_warm_up: impl FnOnce(&Workload, &TuDuGrad<f32>) -> std::result::Result<P, E>,
) -> std::result::Result<(Measurement, P), E> {
    if spec.runs == 0 {
        return Err(Error::param("runs", 0, "at least one timed run is needed").into());
    }
    let load_before = load_avg();
    let est = spec.estimator;
    let w = Workload::synthetic(spec.n, spec.d, spec.c, spec.seed)?;
    let flops = w.flops(est)?;
    let evaluate = || if spec.tf32 { device::allowing_tf32(|| w.tu_du(est)) } else { w.tu_du(est) };
    let (first, _) = device::scoped(spec.device, evaluate).map_err(Error::from)?;
    let (j_tu, j_du) = (first.tu.as_ref().expect("tu").value, first.du.as_ref().expect("du").value);
    let prepared = after_warm_up(&w, &first)?;
    drop(first);
    let (times, used) = device::scoped(spec.device, || {
        let mut times = Vec::with_capacity(spec.runs);
        for _ in 0..spec.runs {
            let t0 = Instant::now();
            let r = evaluate()?;
            times.push(t0.elapsed().as_secs_f64());
            drop(std::hint::black_box(r));
        }
        Ok(times)
    })
    .map_err(Error::from)?;
    let peak_rss = peak_rss_bytes();
    let seconds = median(&times);
    let gemm_gflops = gemm_peak(spec.d);
    let (n_source, n_target) = (w.zs.nrows(), w.zt.nrows());
    drop(w);
    let m = Measurement {
        n: spec.n,
        n_source,
        n_target,
        d: spec.d,
        c: spec.c,
        mcmd: est.to_string(),
        seed: spec.seed,
        runs: spec.runs,
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
        device: used,
        tf32: spec.tf32,
        load_avg_1m_before: load_before,
        load_avg_1m_after: None,
        peers: None,
    };
    Ok((m, prepared))
}

/// The median time of one MUL adaptation iteration.
#[derive(Clone, Debug)]
pub struct MulIteration {
    pub n_source: usize,
    pub n_target: usize,
    pub dim: usize,
    pub hidden: Vec<usize>,
    /// Median gap between adaptation iterations, in milliseconds.
    pub median_ms: f64,
    /// Gaps measured (0: no adaptation iteration was recorded).
    pub gaps: usize,
}

/// Median time of one MUL adaptation iteration (forward, BBSE-QP, MUL terms, backward, AdamW)
/// on Office-Caltech10 amazon→webcam with the default configuration (pre-training shortened to
/// 50 iterations, 12 adaptation iterations timed from the progress callback). `None` when
/// `data` holds no Office-Caltech10 features.
pub fn mul_iteration(data: &Path) -> Result<Option<MulIteration>> {
    if !data.join("amazon_features.npy").exists() {
        return Ok(None);
    }
    let (src, tgt) = glshift::data::load_pair(data, "amazon", "webcam")?;
    let cfg = FitConfig { pretrain_iters: 50, adapt_iters: 12, ..Default::default() };
    let mut stamps: Vec<f64> = Vec::new();
    let t0 = Instant::now();
    glshift::pipeline::run(&src, &tgt, &cfg, &mut |p| {
        if p.stage == Stage::Adapt {
            stamps.push(t0.elapsed().as_secs_f64());
        }
    })?;
    let gaps: Vec<f64> = stamps.windows(2).map(|w| w[1] - w[0]).collect();
    Ok(Some(MulIteration {
        n_source: src.n(),
        n_target: tgt.n(),
        dim: src.dim(),
        hidden: cfg.network.hidden.clone(),
        median_ms: if gaps.is_empty() { f64::NAN } else { 1e3 * median(&gaps) },
        gaps: gaps.len(),
    }))
}
