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
        if j == i % 3 { 3.0 + k + offset + jitter } else { jitter + offset }
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
    std::fs::write(
        &path,
        "pretrain_iters = 30\nadapt_iters = 20\n[network]\nhidden = [16]\n",
    )
    .unwrap();
    path
}

pub fn out_is_empty(out: &Path) -> bool {
    !out.exists() || std::fs::read_dir(out).map(|mut d| d.next().is_none()).unwrap_or(true)
}
