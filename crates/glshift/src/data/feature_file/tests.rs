//! `FeatureFile`: rows read on demand equal the whole-file reader's, and a file that changes
//! under the reader is an error naming it.

use std::io::Write;

use ndarray::{Array2, Axis};
use ndarray_npy::WriteNpyExt;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::FeatureFile;
use crate::data::{read_npy_matrix, Preprocess, PreprocessStats, Rows};

fn random(n: usize, d: usize, seed: u64) -> Array2<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((n, d), |_| rng.random_range(-3.0f32..5.0))
}

fn write(dir: &std::path::Path, name: &str, x: &Array2<f32>) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    x.write_npy(&mut f).unwrap();
    path
}

#[test]
fn rows_in_any_order_equal_the_loaded_rows() {
    let dir = tempfile::tempdir().unwrap();
    let x = random(37, 5, 1);
    let path = write(dir.path(), "a.npy", &x);
    let f = FeatureFile::open(&path).unwrap().expect("C order");
    assert_eq!((f.nrows(), f.ncols()), (37, 5));
    let rows = [3, 4, 5, 0, 36, 36, 10, 9];
    let got = Rows::File(&f, None).gather(&rows).unwrap();
    assert_eq!(got, x.select(Axis(0), &rows));
    let loaded = read_npy_matrix(&path).unwrap();
    assert_eq!(Rows::File(&f, None).block(0..37).unwrap().to_owned(), loaded);
}

#[test]
fn float64_files_convert_as_the_whole_file_reader() {
    let dir = tempfile::tempdir().unwrap();
    let x = random(9, 4, 2).mapv(|v| f64::from(v) * 1.000_000_1);
    let path = dir.path().join("b.npy");
    x.write_npy(std::fs::File::create(&path).unwrap()).unwrap();
    let f = FeatureFile::open(&path).unwrap().unwrap();
    assert_eq!(
        Rows::File(&f, None).gather(&[8, 0, 1]).unwrap(),
        read_npy_matrix(&path).unwrap().select(Axis(0), &[8, 0, 1])
    );
}

#[test]
fn preprocessing_blocks_equals_preprocessing_in_place() {
    let dir = tempfile::tempdir().unwrap();
    // More rows than one block, so the statistics are summed over several blocks.
    let x = random(crate::data::BLOCK_ROWS + 77, 3, 3);
    let path = write(dir.path(), "c.npy", &x);
    let f = FeatureFile::open(&path).unwrap().unwrap();
    for how in [Preprocess::ZScore, Preprocess::L2, Preprocess::L1ZScore] {
        let from_file = PreprocessStats::fit_rows(Rows::File(&f, None), how).unwrap();
        let in_memory = PreprocessStats::fit(x.view(), how).unwrap();
        assert_eq!(from_file, in_memory, "{how}");
        let mut expect = x.clone();
        in_memory.apply(&mut expect).unwrap();
        let rows: Vec<usize> = (0..x.nrows()).rev().step_by(7).collect();
        assert_eq!(
            Rows::File(&f, Some(&from_file)).gather(&rows).unwrap(),
            expect.select(Axis(0), &rows),
            "{how}"
        );
    }
}

#[test]
fn fortran_order_is_left_to_the_whole_file_reader() {
    let dir = tempfile::tempdir().unwrap();
    let x = random(6, 3, 4).t().as_standard_layout().into_owned().reversed_axes();
    assert!(!x.is_standard_layout());
    let path = write(dir.path(), "f.npy", &x);
    assert!(FeatureFile::open(&path).unwrap().is_none());
}

#[test]
fn a_file_truncated_or_rewritten_after_opening_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let x = random(50, 4, 5);
    let path = write(dir.path(), "t.npy", &x);
    let f = FeatureFile::open(&path).unwrap().unwrap();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(200).unwrap();
    let err = Rows::File(&f, None).gather(&[49]).unwrap_err().to_string();
    assert!(err.contains("t.npy") && err.contains("changed while glshift was reading it"), "{err}");
    let err = Rows::File(&f, None).gather(&[0]).unwrap_err().to_string();
    assert!(err.contains("t.npy") && err.contains("length went from"), "{err}");

    // Same length, new content: seen by the modification time.
    let path = write(dir.path(), "m.npy", &x);
    let f = FeatureFile::open(&path).unwrap().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut w = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::io::Seek::seek(&mut w, std::io::SeekFrom::End(-4)).unwrap();
    w.write_all(&[0, 0, 0, 0]).unwrap();
    drop(w);
    let err = Rows::File(&f, None).gather(&[1]).unwrap_err().to_string();
    assert!(err.contains("m.npy") && err.contains("it was modified"), "{err}");
}

#[test]
fn a_row_past_the_end_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "e.npy", &random(4, 2, 6));
    let f = FeatureFile::open(&path).unwrap().unwrap();
    let err = Rows::File(&f, None).gather(&[4]).unwrap_err().to_string();
    assert!(err.contains("row 4 asked for") && err.contains("e.npy"), "{err}");
}

#[test]
fn a_truncated_file_is_refused_on_opening() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.npy", &random(8, 2, 7));
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 3).unwrap();
    let err = FeatureFile::open(&path).unwrap_err().to_string();
    assert!(err.contains("s.npy") && err.contains("truncated"), "{err}");
}
