//! Prediction over a matrix read a block of rows at a time (`glshift predict` on files larger
//! than memory): each block goes through [`FittedModel::predict_proba`]'s steps on its own.

use ndarray::{Array2, ArrayView2};

use super::FittedModel;
use crate::nn::softmax;
use crate::{Error, Result};

impl FittedModel {
    /// [`FittedModel::predict_proba`] for the block `x` (`rows × d`) of a larger matrix whose
    /// first row is row `first_row`: the same probabilities (`rows × c`; a row's outputs do not
    /// depend on the other rows, BatchNorm's statistics being frozen), and errors that number
    /// rows in the whole matrix. Errors: another feature dimension, an empty block, a NaN/Inf
    /// value, non-finite outputs.
    pub fn predict_proba_block(&self, x: ArrayView2<f32>, first_row: usize) -> Result<Array2<f32>> {
        if x.ncols() != self.info.input_dim {
            return Err(Error::Shape {
                what: "feature columns of the rows to predict vs the model's".into(),
                expected: self.info.input_dim.to_string(),
                found: x.ncols().to_string(),
            });
        }
        if x.nrows() == 0 || x.ncols() == 0 {
            // The whole-matrix checks say what is wrong (no rows, no columns).
            return self.predict_proba(x);
        }
        for (i, row) in x.outer_iter().enumerate() {
            if let Some((j, v)) = row.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::bad_data(
                    "rows to predict",
                    format!(
                        "non-finite feature value {v} at row {}, column {j} (0-based)",
                        first_row + i
                    ),
                ));
            }
        }
        let mut xp = x.to_owned();
        self.preprocess.apply(&mut xp)?;
        let (_, logits) = self.network.eval_frozen(xp.view(), &self.bn_stats);
        if let Some(i) = logits.rows().into_iter().position(|r| r.iter().any(|v| !v.is_finite())) {
            return Err(Error::numerical(
                "prediction",
                format!(
                    "row {} gives non-finite outputs (its features are far outside the training range?)",
                    first_row + i
                ),
            ));
        }
        Ok(softmax(logits.view()))
    }
}

#[cfg(test)]
mod tests {
    use ndarray::{concatenate, Axis};

    use crate::model::{Dataset, FitParams};

    /// Blocks of any size give the whole matrix's probabilities bit for bit, and row numbers
    /// in errors count from the start of the whole matrix.
    #[test]
    fn blocks_equal_the_whole_matrix_bit_for_bit() {
        let row = |i: usize, k: usize| {
            [k as f32 * 3.0 + (i % 7) as f32 * 0.3, (i % 5) as f32, 1.0 - k as f32, (i % 3) as f32]
        };
        let xs = Array2::from_shape_fn((60, 4), |(i, j)| row(i, i % 3)[j]);
        let ys: Vec<usize> = (0..60).map(|i| i % 3).collect();
        let xt = Array2::from_shape_fn((41, 4), |(i, j)| row(i, i % 2)[j] + 0.25);
        let data = Dataset::new(xs, ys, xt.clone()).unwrap();
        let model = FitParams::mul()
            .seed(0)
            .pretrain_iters(20)
            .adapt_iters(5)
            .check()
            .unwrap()
            .fit(&data)
            .unwrap();
        let whole = model.predict_proba(xt.view()).unwrap();
        for rows in [1, 6, 40, 41, 100] {
            let blocks: Vec<Array2<f32>> = xt
                .axis_chunks_iter(Axis(0), rows)
                .enumerate()
                .map(|(b, x)| model.predict_proba_block(x, b * rows).unwrap())
                .collect();
            let views: Vec<_> = blocks.iter().map(|b| b.view()).collect();
            let joined = concatenate(Axis(0), &views).unwrap();
            let bits = |a: &Array2<f32>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&joined), bits(&whole), "{rows} rows per block");
        }
        let mut bad = xt.slice(ndarray::s![10..20, ..]).to_owned();
        bad[[3, 2]] = f32::NAN;
        let e = model.predict_proba_block(bad.view(), 10).unwrap_err().to_string();
        assert!(e.contains("row 13, column 2"), "{e}");
    }

    use ndarray::Array2;
}
