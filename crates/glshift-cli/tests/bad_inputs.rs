//! The bad-input battery of `glshift fit`: every test breaks one file or one
//! parameter of a small fixture and runs the real binary. Each must exit non-zero, never panic,
//! print a message naming the file or parameter (and, where it helps, what to do), and leave no
//! output file behind.

mod common;

use std::path::Path;

use common::*;
use ndarray::{Array1, Array2};
use ndarray_npy::write_npy;

/// A fixture folder (npy layout, domains `src` and `tgt`, fast config) broken by `breakage`,
/// run with `extra` flags (a flag already present gets its value replaced). Asserts failure,
/// no panic, every `expect` in the message (case-insensitive) and an empty output folder.
/// Returns stderr for further checks.
fn expect_failure(breakage: impl FnOnce(&Path), extra: &[&str], expect: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    fast_config(dir.path());
    breakage(dir.path());
    let out = dir.path().join("run");
    let (data, out_s, cfg) = (
        dir.path().to_str().unwrap().to_string(),
        out.to_str().unwrap().to_string(),
        dir.path().join("fast.toml").to_str().unwrap().to_string(),
    );
    let mut args: Vec<&str> = vec![
        "fit", "--data", &data, "--source", "src", "--target", "tgt", "--config", &cfg, "--out",
        &out_s, "--quiet",
    ];
    // `{dir}` in a flag value stands for the fixture folder.
    let extra: Vec<String> = extra.iter().map(|a| a.replace("{dir}", &data)).collect();
    for pair in extra.chunks(2) {
        match args.iter().position(|a| *a == pair[0]) {
            Some(i) if pair.len() == 2 => args[i + 1] = &pair[1],
            _ => args.extend(pair.iter().map(String::as_str)),
        }
    }
    let o = run(&args);
    let err = stderr(&o);
    assert!(!o.status.success(), "expected failure, got success; stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(!err.trim().is_empty(), "no message");
    for e in expect {
        assert!(err.to_lowercase().contains(&e.to_lowercase()), "message lacks {e:?}: {err}");
    }
    if out.is_dir() {
        let left: Vec<_> =
            std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "output left in {}: {left:?}", out.display());
    }
    eprintln!("{err}"); // the messages, for review with --nocapture
    err
}

/// Replaces the fast config by `text` (settings under test plus the fast ones).
fn config(d: &Path, text: &str) {
    std::fs::write(
        d.join("fast.toml"),
        format!("pretrain_iters = 30\nadapt_iters = 20\n{text}\n[network]\nhidden = [16]\n"),
    )
    .unwrap();
}

fn remove_npy(d: &Path, name: &str) {
    for f in [format!("{name}_features.npy"), format!("{name}_labels.npy")] {
        let _ = std::fs::remove_file(d.join(f));
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

// ---- files and folders -------------------------------------------------------------------

#[test]
fn missing_features_file() {
    expect_failure(|d| std::fs::remove_file(d.join("tgt_features.npy")).unwrap(), &[], &["tgt"]);
}

#[test]
fn missing_data_folder() {
    expect_failure(
        |_| {},
        &["--data", "/nonexistent/glshift-data"],
        &["/nonexistent/glshift-data"],
    );
}

#[test]
fn folder_without_the_domain_lists_the_domains_present() {
    expect_failure(|_| {}, &["--source", "amazon"], &["amazon", "src", "tgt"]);
}

#[test]
fn empty_npy_file() {
    expect_failure(
        |d| std::fs::write(d.join("src_features.npy"), b"").unwrap(),
        &[],
        &["src_features.npy", "empty"],
    );
}

#[test]
fn truncated_npy_file() {
    expect_failure(
        |d| {
            let p = d.join("tgt_features.npy");
            let bytes = std::fs::read(&p).unwrap();
            std::fs::write(&p, &bytes[..bytes.len() - 7]).unwrap();
        },
        &[],
        &["tgt_features.npy", "truncated"],
    );
}

#[test]
fn npy_of_unsupported_dtype() {
    // complex64: 45 × 4 values of 8 bytes.
    expect_failure(
        |d| {
            write_raw_npy(
                &d.join("tgt_features.npy"),
                "<c8",
                false,
                &[45, 4],
                &vec![0u8; 45 * 4 * 8],
            )
        },
        &[],
        &["tgt_features.npy", "dtype"],
    );
}

#[test]
fn npy_of_three_dimensions() {
    expect_failure(
        |d| {
            write_raw_npy(
                &d.join("tgt_features.npy"),
                "<f4",
                false,
                &[45, 2, 2],
                &f32_bytes(&[1.0; 180]),
            )
        },
        &[],
        &["tgt_features.npy", "2-D"],
    );
}

#[test]
fn labels_npy_of_two_columns() {
    expect_failure(
        |d| {
            write_raw_npy(&d.join("src_labels.npy"), "<i8", false, &[60, 2], &vec![0u8; 60 * 2 * 8])
        },
        &[],
        &["src_labels.npy", "shape"],
    );
}

#[test]
fn fractional_labels() {
    expect_failure(
        |d| {
            let y: Vec<u8> = (0..60)
                .flat_map(|i| if i == 4 { 1.5f64 } else { (i % 3) as f64 }.to_le_bytes())
                .collect();
            write_raw_npy(&d.join("src_labels.npy"), "<f8", false, &[60], &y);
        },
        &[],
        &["src_labels.npy", "1.5", "integer"],
    );
}

#[test]
fn mat_without_a_known_feature_key() {
    expect_failure(
        |d| {
            remove_npy(d, "src");
            let (x, y) = blobs(60, 0.0);
            let cols: Vec<f64> = x.t().iter().map(|&v| f64::from(v)).collect();
            let labels: Vec<f64> = y.iter().map(|&v| v as f64).collect();
            write_mat(
                &d.join("src.mat"),
                &[("data", &[60, 4], &cols), ("labels", &[60, 1], &labels)],
            );
        },
        &[],
        &["src.mat", "fts", "data"],
    );
}

#[test]
fn mat_v73_hdf5_is_refused_with_a_conversion_hint() {
    expect_failure(
        |d| {
            remove_npy(d, "src");
            let mut bytes =
                format!("{:<116}", "MATLAB 7.3 MAT-file, Platform: GLNXA64, HDF5 schema 1.00 .")
                    .into_bytes();
            bytes.resize(512, 0);
            std::fs::write(d.join("src.mat"), bytes).unwrap();
        },
        &[],
        &["src.mat", "v7.3", "savemat"],
    );
}

#[test]
fn mat_garbage_after_header() {
    expect_failure(
        |d| {
            remove_npy(d, "src");
            let mut bytes = format!("{:<116}", "MATLAB 5.0 MAT-file").into_bytes();
            bytes.extend([0u8; 8]);
            bytes.extend(0x0100u16.to_le_bytes());
            bytes.extend(b"IM");
            bytes.extend([0xffu8; 40]);
            std::fs::write(d.join("src.mat"), bytes).unwrap();
        },
        &[],
        &["src.mat"],
    );
}

#[test]
fn csv_with_ragged_rows() {
    expect_failure(
        |d| {
            remove_npy(d, "tgt");
            std::fs::write(d.join("tgt.csv"), "f0,f1,f2,f3\n1,2,3,4\n1,2,3\n").unwrap();
        },
        &[],
        &["tgt.csv", "line 3", "3 fields"],
    );
}

#[test]
fn csv_with_a_non_numeric_cell() {
    expect_failure(
        |d| {
            remove_npy(d, "tgt");
            std::fs::write(d.join("tgt.csv"), "f0,f1,f2,f3\n1,2,3,4\n1,two,3,4\n").unwrap();
        },
        &[],
        &["tgt.csv", "line 3", "f1", "two"],
    );
}

#[test]
fn csv_headers_that_differ_between_domains() {
    expect_failure(
        |d| {
            remove_npy(d, "src");
            remove_npy(d, "tgt");
            let (xs, ys) = blobs(60, 0.0);
            let (xt, yt) = blobs(45, 0.3);
            write_csv_domain(d, "src", &xs, Some(&ys));
            write_csv_domain(d, "tgt", &xt, Some(&yt));
            // Same width, different column names: the columns would be silently misaligned.
            let t = std::fs::read_to_string(d.join("tgt.csv")).unwrap();
            std::fs::write(d.join("tgt.csv"), t.replacen("f0,f1", "f1,f0", 1)).unwrap();
        },
        &[],
        &["tgt.csv", "column"],
    );
}

#[test]
fn csv_empty_file() {
    expect_failure(
        |d| {
            remove_npy(d, "tgt");
            std::fs::write(d.join("tgt.csv"), "").unwrap();
        },
        &[],
        &["tgt.csv", "empty"],
    );
}

#[test]
fn malformed_classes_file_count() {
    // classes.txt lists 2 classes, labels go to 2.
    expect_failure(
        |d| std::fs::write(d.join("classes.txt"), "a\nb\n").unwrap(),
        &[],
        &["label 2", "classes.txt"],
    );
}

// ---- values ---------------------------------------------------------------------------------

#[test]
fn nan_feature() {
    expect_failure(
        |d| {
            let (mut x, y) = blobs(45, 0.0);
            x[[3, 2]] = f32::NAN;
            write_domain(d, "tgt", &x, Some(&y));
        },
        &[],
        &["tgt_features.npy", "row 3", "column 2"],
    );
}

#[test]
fn positive_infinite_feature() {
    expect_failure(
        |d| {
            let (mut x, y) = blobs(60, 0.0);
            x[[0, 0]] = f32::INFINITY;
            write_domain(d, "src", &x, Some(&y));
        },
        &[],
        &["src_features.npy", "inf"],
    );
}

#[test]
fn negative_infinite_feature_in_csv() {
    expect_failure(
        |d| {
            remove_npy(d, "src");
            let (mut x, y) = blobs(60, 0.0);
            x[[7, 1]] = f32::NEG_INFINITY;
            write_csv_domain(d, "src", &x, Some(&y));
        },
        &[],
        &["src.csv", "-inf", "row 7"],
    );
}

#[test]
fn source_and_target_of_different_dimension() {
    expect_failure(
        |d| write_domain(d, "tgt", &Array2::<f32>::ones((10, 5)), Some(&Array1::zeros(10))),
        &[],
        &["dimension", "tgt", "5", "4"],
    );
}

#[test]
fn labels_shorter_than_features() {
    expect_failure(
        |d| write_domain(d, "src", &blobs(60, 0.0).0, Some(&Array1::<i64>::zeros(59))),
        &[],
        &["src_labels.npy", "59", "60"],
    );
}

#[test]
fn negative_label() {
    expect_failure(
        |d| {
            let (x, mut y) = blobs(60, 0.0);
            y[5] = -1;
            write_domain(d, "src", &x, Some(&y));
        },
        &[],
        &["src_labels.npy", "-1", "negative"],
    );
}

#[test]
fn label_out_of_range() {
    expect_failure(
        |d| {
            let (x, mut y) = blobs(60, 0.0);
            y[5] = 7;
            write_domain(d, "src", &x, Some(&y));
        },
        &[],
        &["src_labels.npy", "7", "3 classes"],
    );
}

#[test]
fn source_with_one_class() {
    expect_failure(
        |d| write_domain(d, "src", &blobs(60, 0.0).0, Some(&Array1::<i64>::zeros(60))),
        &[],
        &["src", "class"],
    );
}

#[test]
fn source_without_labels() {
    expect_failure(
        |d| std::fs::remove_file(d.join("src_labels.npy")).unwrap(),
        &[],
        &["src", "no labels"],
    );
}

#[test]
fn empty_target() {
    expect_failure(
        |d| write_domain(d, "tgt", &Array2::<f32>::zeros((0, 4)), Some(&Array1::<i64>::zeros(0))),
        &[],
        &["tgt", "0 rows"],
    );
}

#[test]
fn target_holding_a_class_the_source_lacks() {
    // Partial DA: target classes must be a subset of the source's. Source has a, b only.
    expect_failure(
        |d| {
            let (x, y) = blobs(60, 0.0);
            let keep: Vec<usize> = (0..60).filter(|&i| y[i] != 2).collect();
            let xs = x.select(ndarray::Axis(0), &keep);
            let ys = Array1::from_iter(keep.iter().map(|&i| y[i]));
            write_domain(d, "src", &xs, Some(&ys));
        },
        &[],
        &["tgt", "'c'", "source"],
    );
}

#[test]
fn all_identical_source_rows() {
    // Every column constant in the source: z-score gives all zeros, the kernel bandwidth is 0.
    expect_failure(
        |d| {
            let (_, y) = blobs(60, 0.0);
            write_domain(d, "src", &Array2::<f32>::from_elem((60, 4), 2.5), Some(&y));
        },
        &[],
        &["src_features.npy", "constant"],
    );
}

// ---- parameters -----------------------------------------------------------------------------

#[test]
fn eps_not_positive() {
    expect_failure(|d| config(d, "[mul]\neps = 0.0"), &[], &["mul.eps", "0"]);
}

#[test]
fn eps_negative() {
    expect_failure(|d| config(d, "[mul]\neps = -0.5"), &[], &["mul.eps", "-0.5"]);
}

#[test]
fn tau_above_one() {
    expect_failure(|d| config(d, "[mul]\ntau = 1.5"), &[], &["mul.tau", "1.5", "(0, 1)"]);
}

#[test]
fn tau_zero() {
    expect_failure(|d| config(d, "[mul]\ntau = 0.0"), &[], &["mul.tau", "(0, 1)"]);
}

#[test]
fn negative_lambda() {
    expect_failure(|d| config(d, "[mul]\nlambda_tu = -1.0"), &[], &["mul.lambda_tu", "-1"]);
}

#[test]
fn zero_iterations() {
    expect_failure(
        |d| std::fs::write(d.join("fast.toml"), "pretrain_iters = 0\nadapt_iters = 0\n").unwrap(),
        &[],
        &["iter", "0"],
    );
}

#[test]
fn unknown_method_name() {
    expect_failure(|_| {}, &["--method", "dann-x"], &["method", "dann-x", "source, mul"]);
}

#[test]
fn non_positive_learning_rate() {
    expect_failure(|d| config(d, "[optimizer]\nlr = 0.0"), &[], &["optimizer.lr", "> 0"]);
}

#[test]
fn network_without_layers() {
    expect_failure(
        |d| {
            std::fs::write(
                d.join("fast.toml"),
                "pretrain_iters = 5\nadapt_iters = 5\n[network]\nhidden = []\n",
            )
            .unwrap()
        },
        &[],
        &["network.hidden", "[]"],
    );
}

#[test]
fn dropout_of_one() {
    expect_failure(
        |d| {
            std::fs::write(
                d.join("fast.toml"),
                "pretrain_iters = 5\nadapt_iters = 5\n[network]\ndropout = 1.0\n",
            )
            .unwrap()
        },
        &[],
        &["network.dropout", "[0, 1)"],
    );
}

#[test]
fn memory_limit_below_the_estimate() {
    // The limit is a setting: a tiny one refuses even the small fixture.
    expect_failure(
        |d| config(d, "max_memory_gib = 0.000001"),
        &[],
        &["max_memory_gib", "0.000001", "GiB"],
    );
}

#[test]
fn unknown_config_key() {
    expect_failure(|d| config(d, "learning_rate = 0.1"), &[], &["fast.toml", "learning_rate"]);
}

#[test]
fn missing_config_file() {
    let err = expect_failure(
        |_| {},
        &["--config", "/nonexistent/glshift.toml"],
        &["/nonexistent/glshift.toml", "no such file"],
    );
    assert_eq!(err.matches("os error 2").count(), 1, "cause repeated: {err}");
}

#[test]
fn output_path_under_a_file_is_not_writable() {
    // As root a read-only mode is no obstacle, so the folder is made impossible to create.
    expect_failure(
        |d| std::fs::write(d.join("blocker"), "x").unwrap(),
        &["--out", "{dir}/blocker/run"],
        &["blocker/run", "--out"],
    );
}

// ---- numerical guards -------------------------------------------------------

#[test]
fn diverging_learning_rate_names_the_iteration_and_term() {
    let err = expect_failure(
        |d| config(d, "[optimizer]\nlr = 1e30"),
        &[],
        &["Pretrain iteration", "optimizer.lr", "1e30"],
    );
    assert!(err.contains("cross-entropy") || err.contains("gradient"), "no term named: {err}");
}

#[test]
fn huge_lambda_names_the_adaptation_iteration_and_kernel_term() {
    let err = expect_failure(
        |d| config(d, "[mul]\nlambda_tu = 1e300"),
        &[],
        &["Adapt iteration", "mul.lambda_tu", "1e300"],
    );
    assert!(err.contains("J_TU") || err.contains("kernel"), "no term named: {err}");
}

// ---- memory ------------------------------------------------------------------------------------

#[test]
fn million_dimensional_rows_are_refused_by_the_memory_estimate() {
    // 10⁶ columns: with the default G (first width 512) the network alone needs > 8 GiB, the
    // default `max_memory_gib`. Refused before training, not killed by the system.
    let err = expect_failure(
        |d| {
            let dim = 1_000_000;
            let xs = Array2::from_shape_fn((6, dim), |(i, j)| if j == i % 3 { 1.0 } else { 0.0 });
            let xt = Array2::from_shape_fn((3, dim), |(i, j)| if j == i { 1.0 } else { 0.0 });
            write_domain(d, "src", &xs, Some(&Array1::from_vec(vec![0, 1, 2, 0, 1, 2])));
            write_domain(d, "tgt", &xt, Some(&Array1::from_vec(vec![0, 1, 2])));
            std::fs::write(d.join("fast.toml"), "pretrain_iters = 1\nadapt_iters = 1\n").unwrap();
        },
        &[],
        &["max_memory_gib", "1000000", "GiB", "PCA"],
    );
    assert!(err.contains("= 8"), "default limit not shown: {err}");
}

// ---- odd but valid inputs: must work ---------------------------------------------------------

/// Runs `fit` on the fixture folder `d` and returns predictions.csv.
fn fit_ok(d: &Path, out: &str) -> Vec<u8> {
    let out = d.join(out);
    let o = run(&[
        "fit",
        "--data",
        d.to_str().unwrap(),
        "--source",
        "src",
        "--target",
        "tgt",
        "--config",
        d.join("fast.toml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::read(out.join("predictions.csv")).unwrap()
}

#[test]
fn fortran_order_npy_gives_the_same_result_as_c_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_fixture(d);
    fast_config(d);
    let c_order = fit_ok(d, "c");
    let (xt, _) = blobs(45, 0.3);
    let column_major: Vec<f32> = xt.t().iter().copied().collect();
    write_raw_npy(&d.join("tgt_features.npy"), "<f4", true, &[45, 4], &f32_bytes(&column_major));
    assert_eq!(fit_ok(d, "f"), c_order);
}

#[test]
fn zero_variance_column_under_z_score_trains() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_fixture(d);
    fast_config(d);
    let (mut xs, ys) = blobs(60, 0.0);
    xs.column_mut(3).fill(5.0);
    write_domain(d, "src", &xs, Some(&ys));
    fit_ok(d, "run");
    // serde_json writes NaN as null: every loss and prior must be a number.
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("run/report.json")).unwrap()).unwrap();
    assert!(r["estimated_target_prior"].as_array().unwrap().iter().all(|v| v.is_f64()));
    assert!(r["target_accuracy"].is_f64());
    for rec in r["history"].as_array().unwrap() {
        assert!(rec["total"].is_f64() && rec["ce"].is_f64(), "non-finite loss: {rec}");
    }
}

// ---- model files (`glshift predict`) ------------------------------------------------------------

/// `predict` fails with every phrase of `expect` in its message, no panic, and leaves no output.
fn expect_predict_failure(args: &[&str], out: &Path, expect: &[&str]) {
    let o = predict(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "expected failure; stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    for e in expect {
        assert!(err.to_lowercase().contains(&e.to_lowercase()), "message lacks {e:?}: {err}");
    }
    assert!(out_is_empty(out), "output left in {}", out.display());
}

#[test]
fn bad_inputs_to_predict_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let fit = fitted_fixture(dir.path());
    let good = std::fs::read(fit.join("model.glshift")).unwrap();
    let out = dir.path().join("never");
    let (d, o) = (dir.path().to_str().unwrap(), out.to_str().unwrap());
    let with_model = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    };
    let domain = |m: &str, expect: &[&str]| {
        expect_predict_failure(
            &["--model", m, "--data", d, "--domain", "tgt", "--out", o],
            &out,
            expect,
        )
    };
    domain(
        &with_model("truncated.glshift", &good[..good.len() / 3]),
        &["truncated.glshift", "truncated or damaged"],
    );
    domain(&with_model("empty.glshift", b""), &["empty.glshift"]);
    let mut flipped = good.clone();
    let at = flipped.len() - 10;
    flipped[at] ^= 0xff;
    domain(&with_model("flipped.glshift", &flipped), &["flipped.glshift", "checksum"]);
    domain(
        &with_model("report.glshift", &std::fs::read(fit.join("report.json")).unwrap()),
        &["report.glshift"],
    );
    domain(dir.path().join("missing.glshift").to_str().unwrap(), &["missing.glshift"]);
    // Rows of another dimension, and rows with NaN.
    let model = fit.join("model.glshift");
    let x5 = dir.path().join("x5.npy");
    write_npy(&x5, &Array2::<f32>::zeros((3, 5))).unwrap();
    expect_predict_failure(
        &["--model", model.to_str().unwrap(), "--features", x5.to_str().unwrap(), "--out", o],
        &out,
        &["expected 4", "found 5"],
    );
    let mut nan = Array2::<f32>::zeros((3, 4));
    nan[[1, 2]] = f32::NAN;
    let xn = dir.path().join("xn.npy");
    write_npy(&xn, &nan).unwrap();
    expect_predict_failure(
        &["--model", model.to_str().unwrap(), "--features", xn.to_str().unwrap(), "--out", o],
        &out,
        &["row 1, column 2"],
    );
    // Labels outside the model's classes, and a domain whose class list differs.
    let y = dir.path().join("ybad.npy");
    write_npy(&y, &ndarray::arr1(&[0i64, 1, 7])).unwrap();
    let x3 = dir.path().join("x3.npy");
    write_npy(&x3, &Array2::<f32>::zeros((3, 4))).unwrap();
    expect_predict_failure(
        &[
            "--model",
            model.to_str().unwrap(),
            "--features",
            x3.to_str().unwrap(),
            "--labels",
            y.to_str().unwrap(),
            "--out",
            o,
        ],
        &out,
        &["ybad.npy", "label 7"],
    );
    std::fs::write(dir.path().join("classes.txt"), "a\nb\nz\n").unwrap();
    expect_predict_failure(
        &["--model", model.to_str().unwrap(), "--data", d, "--domain", "tgt", "--out", o],
        &out,
        &["differ from the model"],
    );
}
