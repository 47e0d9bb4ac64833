//! The memory check (`glshift::train::memory_estimate_bytes`, which refuses a fit over
//! `max_memory_gib`) held against what a fit really uses: `glshift fit` on a generated task of
//! 8 000 rows × 1 024 dims with the default network, in a child process whose peak resident
//! set is read from the kernel (`wait4`'s `ru_maxrss`). The estimate must not be below the
//! measured peak (a fit it allows must fit) nor far above it (a fit that fits must be allowed).
//! The same for the mini-batch estimate (`minibatch_memory_estimate_bytes_of`) on a forced
//! mini-batch fit of 20 000 rows × 1 024 dims, which reads its rows from the `.npy` files.

mod common;

use std::path::Path;

use common::{glshift, run, stderr};
use glshift::config::{FitConfig, Training};
use glshift::train::{memory_estimate_bytes, minibatch_memory_estimate_bytes_of};

/// Runs `glshift ARGS` and returns (success, peak RSS in bytes) from `wait4`.
fn run_measured(args: &[&str]) -> (bool, f64) {
    #[allow(clippy::zombie_processes)] // reaped by wait4 below, which also reports its peak RSS
    let child = glshift()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct, which wait4 fills.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet reaped (std's `Child` is never waited on here).
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4 failed");
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (ok, usage.ru_maxrss as f64 * 1024.0) // Linux reports KiB
}

/// Generates `ns + nt` rows × `d` dims (12 classes), fits them with the settings `toml` and
/// returns the fit's peak RSS in bytes.
fn measured_fit_peak(ns: usize, nt: usize, d: usize, toml: &str) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("gen");
    let o = run(&[
        "generate",
        "--source-rows",
        &ns.to_string(),
        "--target-rows",
        &nt.to_string(),
        "--dims",
        &d.to_string(),
        "--classes",
        &C.to_string(),
        "--out",
        data.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cfg_path = dir.path().join("short.toml");
    std::fs::write(&cfg_path, toml).unwrap();
    let out = dir.path().join("run");
    let (ok, peak) = run_measured(&[
        "fit",
        "--data",
        data.to_str().unwrap(),
        "--source",
        "source",
        "--target",
        "target",
        "--config",
        cfg_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok && Path::new(&out).join("report.json").exists(), "the fit failed");
    peak
}

const C: usize = 12;

/// The estimate must lie in [peak, 1.6 × peak].
fn check_bounds(estimate: f64, peak: f64) {
    let mib = |b: f64| b / (1u64 << 20) as f64;
    eprintln!(
        "peak RSS {:.0} MiB, estimate {:.0} MiB (ratio {:.2})",
        mib(peak),
        mib(estimate),
        estimate / peak
    );
    assert!(
        estimate >= peak,
        "estimate {:.0} MiB below the measured peak {:.0} MiB",
        mib(estimate),
        mib(peak)
    );
    assert!(
        estimate <= 1.6 * peak,
        "estimate {:.0} MiB far above the measured peak {:.0} MiB",
        mib(estimate),
        mib(peak)
    );
}

#[test]
fn the_memory_estimate_bounds_a_fits_measured_peak_from_above_and_closely() {
    // The default network and data path; few iterations (peak memory does not grow with them).
    let (ns, nt, d) = (6000usize, 2000usize, 1024usize);
    let peak = measured_fit_peak(ns, nt, d, "pretrain_iters = 4\nadapt_iters = 2\n");
    check_bounds(memory_estimate_bytes(ns + nt, d, C, &FitConfig::default()), peak);
}

#[test]
fn the_minibatch_memory_estimate_bounds_a_minibatch_fits_peak() {
    // Enough steps for two full views and the memory bank; the default batch and chunks.
    let (ns, nt, d) = (16_000usize, 4000usize, 1024usize);
    let toml = "training = \"mini-batch\"\npretrain_iters = 30\nadapt_iters = 30\n";
    let peak = measured_fit_peak(ns, nt, d, toml);
    let cfg = FitConfig { training: Training::MiniBatch, ..FitConfig::default() };
    check_bounds(minibatch_memory_estimate_bytes_of(ns + nt, d, C, &cfg, false), peak);
}
