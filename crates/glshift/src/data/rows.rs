//! Feature rows as a fit reads them: an `n × d` array in memory, or a `.npy` file read a block
//! of rows at a time ([`FeatureFile`]) with the fit's preprocessing applied to each block as it
//! is read. Preprocessing is row-wise (a z-score per column, a norm per row), so a block read
//! from a file and preprocessed holds exactly the bits the same rows would hold had the whole
//! file been loaded and preprocessed in place: a fit reads the same numbers either way.

use std::ops::Range;
use std::path::Path;

use ndarray::{s, Array2, ArrayView2, ArrayViewMut2, Axis, CowArray, Ix2};

use super::{FeatureFile, PreprocessStats};
use crate::Result;

/// Rows per block of a full pass over file rows ([`Rows::for_each_block`]).
pub const BLOCK_ROWS: usize = super::CHUNK_ROWS;

/// `n × d` feature rows, in memory or in a file.
#[derive(Clone, Copy, Debug)]
pub enum Rows<'a> {
    /// Rows in memory, as the fit trains on them (preprocessed already where it preprocesses).
    Memory(ArrayView2<'a, f32>),
    /// Rows in memory as stored, the statistics applied to every block read: a borrowed array
    /// that a mini-batch fit preprocesses a batch at a time instead of copying it whole.
    Scaled(ArrayView2<'a, f32>, &'a PreprocessStats),
    /// Rows of a file; the statistics, when given, are applied to every block read.
    File(&'a FeatureFile, Option<&'a PreprocessStats>),
}

impl<'a> Rows<'a> {
    /// Rows n.
    pub fn nrows(&self) -> usize {
        match self {
            Rows::Memory(x) | Rows::Scaled(x, _) => x.nrows(),
            Rows::File(f, _) => f.nrows(),
        }
    }

    /// Columns d.
    pub fn ncols(&self) -> usize {
        match self {
            Rows::Memory(x) | Rows::Scaled(x, _) => x.ncols(),
            Rows::File(f, _) => f.ncols(),
        }
    }

    /// The rows when they are in memory as the fit reads them (not [`Rows::Scaled`]).
    pub fn memory(&self) -> Option<ArrayView2<'a, f32>> {
        match self {
            Rows::Memory(x) => Some(*x),
            Rows::Scaled(..) | Rows::File(..) => None,
        }
    }

    /// The file the rows are read from, if any.
    pub fn path(&self) -> Option<&'a Path> {
        match self {
            Rows::Memory(_) | Rows::Scaled(..) => None,
            Rows::File(f, _) => Some(f.path()),
        }
    }

    /// The same rows with `stats` applied to every block read: memory rows become
    /// [`Rows::Scaled`], file rows carry the statistics (replacing any they had).
    pub fn preprocessed_by<'s>(self, stats: &'s PreprocessStats) -> Rows<'s>
    where
        'a: 's,
    {
        match self {
            Rows::Memory(x) | Rows::Scaled(x, _) => Rows::Scaled(x.reborrow(), stats),
            Rows::File(f, _) => Rows::File(f, Some(stats)),
        }
    }

    /// Rows `rows` (any order, repeats allowed), copied: `rows.len() × d`.
    pub fn gather(&self, rows: &[usize]) -> Result<Array2<f32>> {
        let mut out = Array2::zeros((rows.len(), self.ncols()));
        self.read_into(rows, out.view_mut())?;
        Ok(out)
    }

    /// Fills row `i` of `out` (`rows.len() × d`) with row `rows[i]`.
    pub fn read_into(&self, rows: &[usize], mut out: ArrayViewMut2<f32>) -> Result<()> {
        let copy = |x: &ArrayView2<f32>, out: &mut ArrayViewMut2<f32>| {
            for (mut o, &r) in out.axis_iter_mut(Axis(0)).zip(rows) {
                o.assign(&x.row(r));
            }
        };
        match self {
            Rows::Memory(x) => {
                copy(x, &mut out);
                Ok(())
            }
            Rows::Scaled(x, stats) => {
                copy(x, &mut out);
                stats.apply_view(out)
            }
            Rows::File(f, stats) => {
                f.read_rows(rows, out.view_mut())?;
                match stats {
                    Some(st) => st.apply_view(out),
                    None => Ok(()),
                }
            }
        }
    }

    /// Rows `range`: a view when in memory, else read (`range.len() × d`).
    pub fn block(&self, range: Range<usize>) -> Result<CowArray<'a, f32, Ix2>> {
        match self {
            Rows::Memory(x) => Ok(x.slice_move(s![range, ..]).into()),
            Rows::Scaled(..) | Rows::File(..) => {
                Ok(self.gather(&range.collect::<Vec<_>>())?.into())
            }
        }
    }

    /// Calls `f(first_row, block)` on consecutive blocks covering every row in order: one
    /// block (the whole array) in memory, [`BLOCK_ROWS`] rows at a time otherwise.
    pub fn for_each_block(
        &self,
        mut f: impl FnMut(usize, ArrayView2<f32>) -> Result<()>,
    ) -> Result<()> {
        self.blocks_while(|first, block| f(first, block).map(|()| true)).map(drop)
    }

    /// [`Rows::for_each_block`] that stops at the first block for which `f` says `false`
    /// (later blocks are not read); whether every call said `true`.
    pub fn blocks_while(
        &self,
        mut f: impl FnMut(usize, ArrayView2<f32>) -> Result<bool>,
    ) -> Result<bool> {
        match self {
            Rows::Memory(x) => f(0, *x),
            Rows::Scaled(..) | Rows::File(..) => {
                let n = self.nrows();
                for start in (0..n).step_by(BLOCK_ROWS) {
                    let block = self.block(start..(start + BLOCK_ROWS).min(n))?;
                    if !f(start, block.view())? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }
}
