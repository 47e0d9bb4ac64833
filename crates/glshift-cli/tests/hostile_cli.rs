//! Every command on crafted input under a memory limit (`ulimit -v`): a hostile file must end
//! in a clean error (exit status 1, a message naming the file, no output written), never an
//! abort, a stack overflow or an allocation that the limit turns into a crash. The weights and
//! images are the hostile kinds of `crates/glshift-extract/tests/fuzz_regressions/`; the data
//! files are hand-made here (npy headers that claim terabytes, truncated payloads, damaged
//! model and report files).

mod common;
#[path = "../../glshift-extract/tests/support/shared.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{fast_config, stderr, write_fixture, write_raw_npy};

/// Address space allowed to the command, in KiB (the binary, its threads' stacks and the
/// allocator's arenas fit in it many times over; a terabyte request does not).
const LIMIT_KIB: u64 = 2 << 20;

/// Runs `glshift ARGS` under `ulimit -v LIMIT_KIB`.
fn run_limited(args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_glshift"))
        .args(args)
        .output()
        .expect("sh runs")
}

/// A clean failure: exit status 1 with `error:` and every `names` in the message, and no `out`.
fn assert_clean_error(o: &Output, names: &[&str], out: &Path) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "status {:?}: {err}", o.status);
    assert!(err.contains("error:"), "{err}");
    for n in names {
        assert!(err.contains(n), "{n} not named: {err}");
    }
    assert!(common::out_is_empty(out), "{} was written: {err}", out.display());
}

fn regression(target: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../glshift-extract/tests/fuzz_regressions")
        .join(target)
        .join(name)
}

fn seed(target: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../glshift-extract/tests/fuzz_seeds")
        .join(target)
        .join(name)
}

/// An images folder `d/cls/` holding one valid PNG.
fn images_folder(root: &Path) -> PathBuf {
    let dir = root.join("imgs");
    std::fs::create_dir_all(dir.join("d/cls")).unwrap();
    std::fs::copy(seed("image_path", "rgb_8x6.png"), dir.join("d/cls/ok.png")).unwrap();
    dir
}

#[test]
fn extract_refuses_hostile_weights_files_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let images = images_folder(tmp.path());
    for name in [
        "deep_nesting.pth",
        "memo_doubling.pth",
        "broadcast_view.pth",
        "wrapping_view.pth",
        "shared_storage.pth",
    ] {
        let out = tmp.path().join(format!("out-{name}"));
        let weights = regression("pth_reader", name);
        let o = run_limited(&[
            "extract",
            "--images",
            images.to_str().unwrap(),
            "--weights",
            weights.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ]);
        assert_clean_error(&o, &[name], &out);
    }
}

#[test]
fn extract_skips_hostile_images_by_name_and_warns_of_an_empty_class_folder() {
    let Some(weights) = support::shared("models/efficientnet-lite2-9656183e.pth") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let images = images_folder(tmp.path());
    for name in ["sliver_1x16000.png", "huge_header.png"] {
        std::fs::copy(regression("image_path", name), images.join("d/cls").join(name)).unwrap();
    }
    std::fs::create_dir_all(images.join("d/empty")).unwrap();
    let out = tmp.path().join("out");
    let o = run_limited(&[
        "extract",
        "--images",
        images.to_str().unwrap(),
        "--weights",
        weights.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{:?}: {err}", o.status);
    for name in ["sliver_1x16000.png", "huge_header.png"] {
        assert!(
            err.contains(&format!(
                "warning: skipped {}",
                images.join("d/cls").join(name).display()
            )),
            "{err}"
        );
    }
    assert!(
        err.contains("class folder") && err.contains("empty") && err.contains("holds no file"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(out.join("classes.txt")).unwrap(), "cls\n");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("extract.json")).unwrap()).unwrap();
    assert_eq!(report["classes_left_out"], serde_json::json!(["empty"]));
    assert_eq!(report["domains"][0]["skipped"].as_array().unwrap().len(), 2);
    assert_eq!(report["domains"][0]["extracted"], 1);
}

/// A `.npy` whose header claims `shape` f32 values but holds 16 bytes.
fn lying_npy(path: &Path, shape: &[usize]) {
    write_raw_npy(path, "<f4", false, shape, &[0u8; 16]);
}

#[test]
fn data_commands_refuse_npy_files_that_claim_terabytes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    write_fixture(&data);
    lying_npy(&data.join("tgt_features.npy"), &[1 << 20, 1 << 20]);
    let cfg = fast_config(tmp.path());
    let d = data.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "fit",
            "--data",
            d,
            "--source",
            "src",
            "--target",
            "tgt",
            "--config",
            cfg.to_str().unwrap(),
        ],
        vec!["select", "--data", d, "--source", "src", "--target", "tgt"],
        vec![
            "shift",
            "test",
            "--data",
            d,
            "--source",
            "src",
            "--target",
            "tgt",
            "--config",
            cfg.to_str().unwrap(),
        ],
        vec!["shift", "estimate", "--data", d, "--source", "src", "--target", "tgt"],
        vec![
            "bench",
            "--data",
            d,
            "--setting",
            "uda",
            "--tasks",
            "src:tgt",
            "--seeds",
            "0",
            "--methods",
            "source",
        ],
        vec!["ablation", "--data", d, "--setting", "uda", "--tasks", "src:tgt", "--seeds", "0"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let out = tmp.path().join(format!("out{i}"));
        let out_s = out.join("r.json");
        let out_arg = if args[0] == "shift" {
            out_s.to_str().unwrap().to_string()
        } else {
            out.to_str().unwrap().to_string()
        };
        let mut full: Vec<&str> = args.clone();
        full.extend(["--out", &out_arg]);
        let o = run_limited(&full);
        assert_clean_error(&o, &["tgt_features.npy"], &out);
    }
}

#[test]
fn predict_refuses_a_lying_features_file_and_a_damaged_model() {
    let tmp = tempfile::tempdir().unwrap();
    let feats = tmp.path().join("x.npy");
    lying_npy(&feats, &[1 << 30, 1 << 12]);
    let model = tmp.path().join("m.glshift");
    let mut bytes = b"GLSHIFT".to_vec();
    bytes.extend(u64::MAX.to_le_bytes());
    bytes.extend([0xffu8; 64]);
    std::fs::write(&model, bytes).unwrap();
    let out = tmp.path().join("pred");
    let o = run_limited(&[
        "predict",
        "--model",
        model.to_str().unwrap(),
        "--features",
        feats.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_clean_error(&o, &["m.glshift"], &out);
}

#[test]
fn shift_estimate_and_report_refuse_damaged_inputs_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let probs = tmp.path().join("p.npy");
    lying_npy(&probs, &[1 << 40, 10]);
    let out = tmp.path().join("est.json");
    let p = probs.to_str().unwrap();
    let o = run_limited(&[
        "shift",
        "estimate",
        "--source-probs",
        p,
        "--source-labels",
        p,
        "--target-probs",
        p,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_clean_error(&o, &["p.npy"], &out);
    let run = tmp.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("report.json"), b"{\"method\": [[[[[[").unwrap();
    let o = run_limited(&["report", run.to_str().unwrap()]);
    assert_clean_error(&o, &["report.json"], &run.join("report.html"));
}
