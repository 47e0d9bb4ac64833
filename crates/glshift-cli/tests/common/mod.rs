//! Helpers shared by the CLI integration tests: fixture folders and running the real binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ndarray::{Array1, Array2};
use ndarray_npy::write_npy;

pub fn glshift() -> Command {
    Command::new(env!("CARGO_BIN_EXE_glshift"))
}

pub fn run(args: &[&str]) -> Output {
    glshift().args(args).output().expect("binary runs")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Two small separable domains `src` and `tgt` (3 classes, 4 features) in the npy layout.
pub fn write_fixture(dir: &Path) {
    let (xs, ys) = blobs(60, 0.0);
    let (xt, yt) = blobs(45, 0.3);
    write_domain(dir, "src", &xs, Some(&ys));
    write_domain(dir, "tgt", &xt, Some(&yt));
    std::fs::write(dir.join("classes.txt"), "a\nb\nc\n").unwrap();
}

pub fn blobs(n: usize, offset: f32) -> (Array2<f32>, Array1<i64>) {
    let x = Array2::from_shape_fn((n, 4), |(i, j)| {
        let k = (i % 3) as f32;
        let jitter = (((i * 7 + j * 13) % 11) as f32 - 5.0) * 0.05;
        if j == i % 3 {
            3.0 + k + offset + jitter
        } else {
            jitter + offset
        }
    });
    let y = Array1::from_shape_fn(n, |i| (i % 3) as i64);
    (x, y)
}

pub fn write_domain(dir: &Path, name: &str, x: &Array2<f32>, y: Option<&Array1<i64>>) {
    write_npy(dir.join(format!("{name}_features.npy")), x).unwrap();
    if let Some(y) = y {
        write_npy(dir.join(format!("{name}_labels.npy")), y).unwrap();
    }
}

/// Settings that make a fixture run take well under a second.
pub fn fast_config(dir: &Path) -> PathBuf {
    let path = dir.join("fast.toml");
    std::fs::write(&path, "pretrain_iters = 30\nadapt_iters = 20\n[network]\nhidden = [16]\n")
        .unwrap();
    path
}

pub fn out_is_empty(out: &Path) -> bool {
    !out.exists() || std::fs::read_dir(out).map(|mut d| d.next().is_none()).unwrap_or(true)
}

/// Writes a `.npy` file by hand (version 1.0): any dtype descriptor, order and shape, with
/// `data` as the raw payload. For files ndarray-npy will not write (3-D, odd dtypes, Fortran).
pub fn write_raw_npy(path: &Path, descr: &str, fortran: bool, shape: &[usize], data: &[u8]) {
    let dims: Vec<String> = shape.iter().map(|s| s.to_string()).collect();
    let shape =
        if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let order = if fortran { "True" } else { "False" };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
}

/// Writes a minimal uncompressed little-endian MATLAB v5 file holding double matrices
/// (`dims` are MATLAB sizes, `values` column-major). Trimmed copy of the writer in
/// `crates/glshift/src/data/tests/mod.rs`.
pub fn write_mat(path: &Path, vars: &[(&str, &[usize], &[f64])]) {
    fn element(out: &mut Vec<u8>, ty: u32, data: &[u8]) {
        out.extend(ty.to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend(data);
        out.resize(out.len().next_multiple_of(8), 0);
    }
    let mut file = format!("{:<116}", "MATLAB 5.0 MAT-file, written by glshift tests").into_bytes();
    file.extend([0u8; 8]);
    file.extend(0x0100u16.to_le_bytes());
    file.extend(b"IM");
    for (name, dims, values) in vars {
        let mut body = Vec::new();
        element(&mut body, 6, &[6u32.to_le_bytes(), 0u32.to_le_bytes()].concat());
        let d: Vec<u8> = dims.iter().flat_map(|&s| (s as i32).to_le_bytes()).collect();
        element(&mut body, 5, &d);
        element(&mut body, 1, name.as_bytes());
        let v: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        element(&mut body, 9, &v);
        element(&mut file, 14, &body);
    }
    std::fs::write(path, file).unwrap();
}

/// Writes `<name>.csv` with a header `f0..f{d-1}[,label]` from a feature matrix and labels.
pub fn write_csv_domain(dir: &Path, name: &str, x: &Array2<f32>, y: Option<&Array1<i64>>) {
    let mut s: Vec<String> = (0..x.ncols()).map(|j| format!("f{j}")).collect();
    if y.is_some() {
        s.push("label".into());
    }
    let mut text = s.join(",") + "\n";
    for (i, row) in x.outer_iter().enumerate() {
        let mut cells: Vec<String> = row.iter().map(|v| v.to_string()).collect();
        if let Some(y) = y {
            cells.push(y[i].to_string());
        }
        text += &(cells.join(",") + "\n");
    }
    std::fs::write(dir.join(format!("{name}.csv")), text).unwrap();
}

/// Runs `glshift fit` of `source` → `target` in `data` with `cfg` into `dir/fit-SOURCE-TARGET`
/// (asserting success) and returns that folder.
pub fn fit_fixture(
    dir: &Path,
    source: &str,
    target: &str,
    data: &Path,
    cfg: &Path,
) -> std::path::PathBuf {
    let out = dir.join(format!("fit-{source}-{target}"));
    let o = run(&[
        "fit",
        "--data",
        data.to_str().unwrap(),
        "--source",
        source,
        "--target",
        target,
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// The fixture folder of [`write_fixture`] in `dir`, fitted `src` → `tgt` with
/// [`fast_config`]: the fit's folder (its `model.glshift`, `predictions.csv`, …).
pub fn fitted_fixture(dir: &Path) -> PathBuf {
    write_fixture(dir);
    let cfg = fast_config(dir);
    fit_fixture(dir, "src", "tgt", dir, &cfg)
}

/// Runs `glshift predict` with `args`.
pub fn predict(args: &[&str]) -> std::process::Output {
    let mut all = vec!["predict"];
    all.extend(args);
    run(&all)
}
