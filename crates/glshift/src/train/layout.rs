//! Row layout of a fit: the checks of the inputs, the source hold-out split, and the rows
//! stacked as `[source train; source hold-out; target]` so that one full-batch forward gives
//! everything an iteration needs. BatchNorm (when enabled) takes its statistics from the source
//! training rows alone (pitfall 4 of ../shared/docs/pitfalls-label-shift.md).

use std::ops::Range;

use ndarray::{s, Array2, ArrayView2, Axis};

use super::records::FitData;
use crate::config::{ConfusionRows, FitConfig};
use crate::data::Rows;
use crate::label_shift;
use crate::{Error, Result};

pub(super) struct Layout<'a> {
    /// Indices (into the source rows) of the training rows and of the hold-out.
    pub hold_idx: Vec<usize>,
    pub y_train: Vec<usize>,
    pub y_hold: Vec<usize>,
    /// `[train; hold-out; target]`: what an adapting method sees. The source training rows
    /// ([`Self::x_train`]) and `[train; hold-out]` ([`Self::x_source`]) are its first rows, so
    /// they are views of it rather than copies.
    pub x_all: Array2<f32>,
    /// Source prior pˢ over all source rows.
    pub source_prior: Vec<f64>,
    pub d: usize,
    pub c: usize,
    /// Mini-batch fits: the caller's rows, read through [`Layout::gather`] (`x_all` is then
    /// empty, 0 × d). `None`: full-batch.
    pub borrowed: Option<Borrowed<'a>>,
    /// `x_all` kept on the GPU inside a GPU scope (uploaded once per fit); a no-op otherwise.
    _pin: crate::device::Pin,
}

/// The caller's source and target rows (in memory or in files), and the source rows in
/// stacked order (`[train; hold-out]`, indices into `source`).
pub(super) struct Borrowed<'a> {
    pub source: Rows<'a>,
    pub target: Rows<'a>,
    pub source_order: Vec<usize>,
}

impl<'a> Layout<'a> {
    /// Checks the data (shapes, labels), then splits the source. The settings and the memory
    /// estimate are checked once per fit before this, by [`super::check_fit`] or by
    /// `CheckedParams`.
    pub fn new(data: &FitData<'a>, cfg: &FitConfig) -> Result<Layout<'a>> {
        let c = data.n_classes;
        let (ns_all, d) = (data.source_x.nrows(), data.source_x.ncols());
        if data.source_y.len() != ns_all {
            return Err(Error::Shape {
                what: "source labels vs source rows".into(),
                expected: ns_all.to_string(),
                found: data.source_y.len().to_string(),
            });
        }
        if data.target_x.ncols() != d {
            return Err(Error::Shape {
                what: "target feature dimension".into(),
                expected: d.to_string(),
                found: data.target_x.ncols().to_string(),
            });
        }
        let n_rows = ns_all + data.target_x.nrows();
        let minibatch = cfg.uses_minibatch(n_rows, d);
        let in_memory = data.source_x.memory().is_some() && data.target_x.memory().is_some();
        let source_prior = label_shift::class_prior(data.source_y, c)?;
        let (train_idx, hold_idx) = split(data, cfg)?;
        let y_train: Vec<usize> = train_idx.iter().map(|&i| data.source_y[i]).collect();
        let y_hold: Vec<usize> = hold_idx.iter().map(|&i| data.source_y[i]).collect();
        if !minibatch && !in_memory {
            // The callers load the rows of full-batch fits (`pipeline::reads_from_files`).
            return Err(Error::param(
                "training",
                "full-batch",
                "rows read from files train by mini-batch only (load them to train full-batch)",
            ));
        }
        let (x_all, borrowed) = if minibatch {
            let source_order = train_idx.iter().chain(&hold_idx).copied().collect();
            (
                Array2::zeros((0, d)),
                Some(Borrowed { source: data.source_x, target: data.target_x, source_order }),
            )
        } else {
            (stack_rows(data, &train_idx, &hold_idx, d)?, None)
        };
        let _pin = crate::device::Pin::new(x_all.view());
        Ok(Layout { hold_idx, y_train, y_hold, x_all, source_prior, d, c, borrowed, _pin })
    }

    /// Rows `rows` of the stacked order `[train; hold-out; target]`, copied (len(rows) × d).
    /// Errors: a file the rows are read from could not be read, or changed.
    pub fn gather(&self, rows: &[usize]) -> Result<Array2<f32>> {
        let Some(b) = &self.borrowed else { return Ok(self.x_all.select(Axis(0), rows)) };
        let off = self.target_offset();
        let mut x = Array2::<f32>::zeros((rows.len(), self.d));
        let (src_pos, tgt_pos): (Vec<usize>, Vec<usize>) =
            (0..rows.len()).partition(|&i| rows[i] < off);
        let src: Vec<usize> = src_pos.iter().map(|&i| b.source_order[rows[i]]).collect();
        let tgt: Vec<usize> = tgt_pos.iter().map(|&i| rows[i] - off).collect();
        if tgt.is_empty() {
            b.source.read_into(&src, x.view_mut())?;
        } else if src.is_empty() {
            b.target.read_into(&tgt, x.view_mut())?;
        } else {
            for (part, pos, from) in [(&src, &src_pos, &b.source), (&tgt, &tgt_pos, &b.target)] {
                let read = from.gather(part)?;
                for (r, &i) in read.rows().into_iter().zip(pos) {
                    x.row_mut(i).assign(&r);
                }
            }
        }
        Ok(x)
    }

    /// Rows one training step forwards, for choosing its device: a mini-batch when the rows are
    /// borrowed, else `full` (the full-batch pass's rows).
    pub fn rows_per_step(&self, cfg: &FitConfig, full: usize) -> usize {
        if self.is_borrowed() {
            cfg.minibatch.batch_size
        } else {
            full
        }
    }

    /// Rows `range` of the stacked order, copied when borrowed (a chunk of a full pass).
    pub fn chunk(&self, range: Range<usize>) -> Result<ndarray::CowArray<'_, f32, ndarray::Ix2>> {
        match &self.borrowed {
            None => Ok(self.x_all.slice(s![range, ..]).into()),
            Some(_) => Ok(self.gather(&range.collect::<Vec<_>>())?.into()),
        }
    }

    /// Rows in the stacked order: source (train + hold-out) then target.
    pub fn n_rows(&self) -> usize {
        match &self.borrowed {
            None => self.x_all.nrows(),
            Some(b) => self.target_offset() + b.target.nrows(),
        }
    }

    /// Whether the fit trains by mini-batch without a stacked copy of the rows.
    pub fn is_borrowed(&self) -> bool {
        self.borrowed.is_some()
    }

    /// Source training rows (n_train × d): BatchNorm's statistics rows in evaluation.
    pub fn x_train(&self) -> ArrayView2<'_, f32> {
        self.x_all.slice(s![..self.n_train(), ..])
    }

    /// Every target row (n_t × d); empty (0 × d) when the rows are borrowed.
    pub fn x_target(&self) -> ArrayView2<'_, f32> {
        let off = if self.is_borrowed() { 0 } else { self.target_offset() };
        self.x_all.slice(s![off.., ..])
    }

    /// `[train; hold-out]` ((n_train + n_hold) × d): what pre-training and `source` see.
    pub fn x_source(&self) -> ArrayView2<'_, f32> {
        self.x_all.slice(s![..self.target_offset(), ..])
    }

    pub fn n_train(&self) -> usize {
        self.y_train.len()
    }

    pub fn n_hold(&self) -> usize {
        self.y_hold.len()
    }

    /// Rows of the hold-out within `x_source` / `x_all`.
    pub fn hold_rows(&self) -> Range<usize> {
        self.n_train()..self.n_train() + self.n_hold()
    }

    /// First target row within `x_all`.
    pub fn target_offset(&self) -> usize {
        self.n_train() + self.n_hold()
    }
}

/// `[source rows train_idx; source rows hold_idx; target]` in one allocation, row by row.
fn stack_rows(
    data: &FitData,
    train_idx: &[usize],
    hold_idx: &[usize],
    d: usize,
) -> Result<Array2<f32>> {
    let ns = train_idx.len() + hold_idx.len();
    let mut x = Array2::<f32>::zeros((ns + data.target_x.nrows(), d));
    let source_rows: Vec<usize> = train_idx.iter().chain(hold_idx).copied().collect();
    data.source_x.read_into(&source_rows, x.slice_mut(s![..ns, ..]))?;
    let target_rows: Vec<usize> = (0..data.target_x.nrows()).collect();
    data.target_x.read_into(&target_rows, x.slice_mut(s![ns.., ..]))?;
    Ok(x)
}

/// Source split, the same for every method: a stratified hold-out that the network never
/// trains on. It decides when pre-training stops (source validation) and, for the methods
/// that estimate the shift, measures the BBSE confusion matrix and the calibration temperature.
/// Returns (training rows, hold-out rows), both sorted as the split gives them.
fn split(data: &FitData, cfg: &FitConfig) -> Result<(Vec<usize>, Vec<usize>)> {
    let (ns_all, c) = (data.source_x.nrows(), data.n_classes);
    if let Some(h) = data.holdout {
        let mut is_hold = vec![false; ns_all];
        for &i in h {
            if i >= ns_all || is_hold[i] {
                return Err(Error::param(
                    "holdout",
                    i,
                    format!("hold-out rows must be distinct and < {ns_all}"),
                ));
            }
            is_hold[i] = true;
        }
        if h.is_empty() || h.len() == ns_all {
            return Err(Error::param(
                "holdout",
                h.len(),
                "the hold-out must leave rows on both sides",
            ));
        }
        let mut hold = h.to_vec();
        hold.sort_unstable();
        Ok(((0..ns_all).filter(|&i| !is_hold[i]).collect(), hold))
    } else if cfg.label_shift.confusion == ConfusionRows::Holdout {
        label_shift::stratified_holdout(
            data.source_y,
            c,
            cfg.label_shift.holdout_fraction,
            cfg.seed,
        )
    } else {
        Ok(((0..ns_all).collect(), Vec::new()))
    }
}
