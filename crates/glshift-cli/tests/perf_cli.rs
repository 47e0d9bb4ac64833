//! `glshift perf` at CI size: the JSON object and its fields, parameter checks.
//! No Python peers here: CI must not need Python.

mod common;

use common::*;
use serde_json::Value;

fn perf_json(args: &[&str]) -> Value {
    let o = glshift().arg("perf").args(args).arg("--json").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "one JSON object on one line: {text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn perf_json_reports_median_time_memory_flops_and_flop_bound_ratio() {
    let v = perf_json(&["--n", "200", "--d", "16", "--c", "3"]);
    let num = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("field {k} missing: {v}"));
    let (secs, flops, gemm, ratio) =
        (num("seconds"), num("flops"), num("gemm_gflops"), num("flop_bound_ratio"));
    assert!(secs > 0.0 && flops > 0.0 && gemm > 0.0);
    assert!(
        (ratio - secs / (flops / (gemm * 1e9))).abs() <= 1e-9 * ratio,
        "ratio = seconds / (flops / gemm)"
    );
    assert!(v["peak_rss_bytes"].as_u64().unwrap() > 1 << 20);
    let all = v["seconds_all"].as_array().unwrap();
    assert_eq!(all.len(), 5, "5 timed runs by default");
    let mut sorted: Vec<f64> = all.iter().map(|x| x.as_f64().unwrap()).collect();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(secs, sorted[2], "seconds is the median");
    assert_eq!(
        (v["n"].as_u64(), v["n_source"].as_u64(), v["n_target"].as_u64()),
        (Some(200), Some(100), Some(100))
    );
    assert!(num("j_tu") > 0.0 && num("j_du") > 0.0);
    assert!(v.get("peers").is_none(), "no peers unless asked");
}

#[test]
fn perf_is_deterministic_in_its_values_and_runs_random_features() {
    let a = perf_json(&["--n", "300", "--d", "8", "--c", "4", "--runs", "1"]);
    let b = perf_json(&["--n", "300", "--d", "8", "--c", "4", "--runs", "1"]);
    assert_eq!((a["j_tu"].as_f64(), a["j_du"].as_f64()), (b["j_tu"].as_f64(), b["j_du"].as_f64()));
    let r = perf_json(&[
        "--n",
        "300",
        "--d",
        "8",
        "--c",
        "4",
        "--runs",
        "1",
        "--mcmd",
        "random-features:4096",
    ]);
    assert_eq!(r["mcmd"], "random-features:4096");
    let rel = (r["j_du"].as_f64().unwrap() - a["j_du"].as_f64().unwrap()).abs()
        / a["j_du"].as_f64().unwrap();
    assert!(rel < 0.1, "random features far from exact: {rel}");
}

#[test]
fn perf_rejects_bad_sizes_before_work() {
    for (args, what) in [
        (vec!["--n", "1"], "`n`"),
        (vec!["--n", "100", "--d", "0"], "`d`"),
        (vec!["--n", "100", "--c", "0"], "`c`"),
        (vec!["--n", "100", "--mcmd", "random-features:0"], "random_features"),
        (vec!["--n", "100", "--mcmd", "fast"], "`mcmd`"),
        (vec!["--n", "100", "--runs", "0"], "`--runs`"),
    ] {
        let o = glshift().arg("perf").args(&args).output().unwrap();
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(stderr(&o).contains(what), "{args:?}: {}", stderr(&o));
    }
}

/// `--device`: the object says where the kernel sums ran (`auto` on a machine without a GPU:
/// the CPU, and why); `cuda` runs there or is one error naming the device; the grid refuses
/// a device it would not use, and `--tf32` any device but `cuda`.
#[test]
fn perf_device_is_reported_and_cuda_without_a_gpu_is_an_error() {
    let v = perf_json(&["--n", "200", "--d", "8", "--c", "3", "--runs", "1", "--device", "auto"]);
    match v["device"]["kind"].as_str() {
        Some("cpu") => {
            assert!(v["device"]["fallback"].as_str().is_some_and(|w| w.contains("CPU")), "{v}")
        }
        Some("cuda") => assert!(v["device"]["name"].is_string(), "{v}"),
        other => panic!("device kind {other:?}: {v}"),
    }
    let cpu = perf_json(&["--n", "200", "--d", "8", "--c", "3", "--runs", "1"]);
    assert_eq!(
        (cpu["device"]["kind"].as_str(), cpu["tf32"].as_bool()),
        (Some("cpu"), Some(false)),
        "the CPU by default: {cpu}"
    );
    let o =
        glshift().args(["perf", "--n", "200", "--d", "8", "--c", "3", "--tf32"]).output().unwrap();
    assert!(
        !o.status.success() && stderr(&o).contains("--tf32 needs --device cuda"),
        "{}",
        stderr(&o)
    );
    let o = glshift()
        .args([
            "perf", "--n", "200", "--d", "8", "--c", "3", "--runs", "1", "--json", "--device",
            "cuda",
        ])
        .output()
        .unwrap();
    if o.status.success() {
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["device"]["kind"], "cuda", "{v}");
    } else {
        assert!(stderr(&o).contains("device cuda"), "{}", stderr(&o));
        assert!(o.stdout.is_empty(), "no object from a failed run");
    }
    let o = glshift().args(["perf", "--device", "cuda", "--grid-n", "200"]).output().unwrap();
    assert!(
        !o.status.success() && stderr(&o).contains("--device applies to one measurement"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn perf_host_iteration_times_each_host_call_and_sums_the_stages() {
    let v = perf_json(&["--host-iteration", "500,300", "--c", "4", "--runs", "3"]);
    assert_eq!(
        (v["n_source"].as_u64(), v["n_holdout"].as_u64(), v["n_target"].as_u64()),
        (Some(500), Some(100), Some(300))
    );
    let calls = v["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 7, "{v}");
    let stage_sum = |stage: &str| -> f64 {
        calls.iter().filter(|c| c["stage"] == stage).map(|c| c["median_ms"].as_f64().unwrap()).sum()
    };
    for c in calls {
        let (median, min) = (c["median_ms"].as_f64().unwrap(), c["min_ms"].as_f64().unwrap());
        assert!(min > 0.0 && min <= median, "{c}");
    }
    assert_eq!(v["adaptation_ms"].as_f64(), Some(stage_sum("adaptation")));
    assert_eq!(v["pretraining_ms"].as_f64(), Some(stage_sum("pre-training")));
    for (args, what) in [
        (vec!["--host-iteration", "500"], "two row counts"),
        (vec!["--host-iteration", "400,0", "--c", "4"], "host-iteration"),
    ] {
        let o = glshift().arg("perf").args(&args).output().unwrap();
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(stderr(&o).contains(what), "{args:?}: {}", stderr(&o));
    }
}
