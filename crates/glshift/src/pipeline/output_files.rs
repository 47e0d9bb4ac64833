//! What a run writes besides `report.json`: `predictions.csv` (one line per target or
//! `predict` row: the predicted class, its confidence, every class's probability; written at
//! once or block by block, same bytes) and the `.npy` bytes of Z and the labels.

use ndarray::{Array2, ArrayView2};

use crate::nn::argmax_row;

/// `predictions.csv`: one line per row of `probs` (`n × c`): row, predicted class (index and
/// name), confidence, and the probability of each of the `c` `classes` (6 decimals).
pub fn predictions_csv(probs: &Array2<f32>, classes: &[String]) -> String {
    let mut out = predictions_csv_header(classes);
    push_predictions_csv_rows(&mut out, probs.view(), classes, 0);
    out
}

/// The header line of [`predictions_csv`] (with its newline).
pub fn predictions_csv_header(classes: &[String]) -> String {
    let mut out = String::from("row,predicted,predicted_name,confidence");
    for name in classes {
        out.push_str(&format!(",p_{}", csv_field(name)));
    }
    out.push('\n');
    out
}

/// Appends the lines of [`predictions_csv`] for `probs` (`rows × c`), numbered from
/// `first_row`: a file written block by block is identical to one written at once.
pub fn push_predictions_csv_rows(
    out: &mut String,
    probs: ArrayView2<f32>,
    classes: &[String],
    first_row: usize,
) {
    use std::fmt::Write;
    for (i, row) in probs.rows().into_iter().enumerate() {
        let k = argmax_row(row).0;
        let _ = write!(out, "{},{k},{},{:.6}", first_row + i, csv_field(&classes[k]), row[k]);
        for p in row {
            let _ = write!(out, ",{p:.6}");
        }
        out.push('\n');
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub(super) fn labels_array(y: &[usize]) -> ndarray::Array1<i64> {
    y.iter().map(|&k| k as i64).collect()
}
