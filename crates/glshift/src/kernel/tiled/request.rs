//! What a tiled pass is asked ([`Request`]) and returns ([`Output`]): plain data, read by the
//! CPU pass (`super`) and by an accelerator (the GPU path in `crate::device` reads it through
//! this module, which names no device); and what both tilings read of it: each objective's Γ_eff per block, the classes of one-hot
//! rows, even splits of rows into tiles.

use std::ops::Range;

use ndarray::{Array2, ArrayView2};

use crate::Real;

/// One labelled block of rows: `z` n×d, `y` n×c.
#[derive(Clone, Copy)]
pub(crate) struct Domain<'a, T> {
    pub z: ArrayView2<'a, T>,
    pub y: ArrayView2<'a, T>,
}

/// ℓ = Σ over `terms` (a, b, Γ^{ab}) of ⟨Γ^{ab}, S^{ab}⟩, a ≤ b, Γ c×c.
#[derive(Clone, Debug, Default)]
pub(crate) struct Objective {
    pub terms: Vec<(usize, usize, Array2<f64>)>,
}

impl Objective {
    /// Γ_eff on block (a, b): the sum of the terms there, a term on a diagonal block (a, a)
    /// symmetrised as Γ + Γᵀ (it stands for both orders of a pair of rows of one domain);
    /// `None` without a term there. The gradient weighs K^{ab} by it.
    pub fn gamma_eff(&self, a: usize, b: usize) -> Option<Array2<f64>> {
        let mut acc: Option<Array2<f64>> = None;
        for (_, _, g) in self.terms.iter().filter(|t| (t.0, t.1) == (a, b)) {
            let e = if a == b { g + &g.t() } else { g.clone() };
            acc = Some(match acc {
                Some(x) => x + e,
                None => e,
            });
        }
        acc
    }
}

/// What to compute.
pub(crate) struct Request<'r, 'a, T> {
    pub domains: &'r [Domain<'a, T>],
    /// Blocks (a ≤ b) whose S is returned in full.
    pub s_blocks: Vec<(usize, usize)>,
    pub objectives: Vec<Objective>,
    pub h: f64,
}

/// Results of a request.
pub(crate) struct Output<T> {
    /// S^{ab} (c×c, f64) for every block of `s_blocks` and of the objectives; for blocks only
    /// objectives use, entries that every objective weighs by 0 may be left at 0.
    pub s: Vec<((usize, usize), Array2<f64>)>,
    /// values[o] = ℓ_o.
    pub values: Vec<f64>,
    /// grads[o][a] = ∂ℓ_o/∂Z_a (n_a×d).
    pub grads: Vec<Vec<Array2<T>>>,
}

impl<T> Output<T> {
    pub fn s_block(&self, a: usize, b: usize) -> &Array2<f64> {
        &self.s.iter().find(|(k, _)| *k == (a, b)).expect("S block was requested").1
    }
}

/// Class of every row when `y` is one-hot (entries 0 or 1, at most one 1 per row; a row of
/// zeros has class `usize::MAX`); None else. Both tiled passes group rows by it.
pub(crate) fn one_hot_classes<T: Real>(y: ArrayView2<T>) -> Option<Vec<usize>> {
    let mut out = Vec::with_capacity(y.nrows());
    for row in y.rows() {
        let mut class = usize::MAX;
        for (k, &v) in row.iter().enumerate() {
            if v == T::one() && class == usize::MAX {
                class = k;
            } else if v != T::zero() {
                return None;
            }
        }
        out.push(class);
    }
    Some(out)
}

/// `n` rows in ⌈n / max⌉ consecutive ranges of near-equal length (none for n = 0).
pub(crate) fn split_even(n: usize, max: usize) -> Vec<Range<usize>> {
    if n == 0 {
        return Vec::new();
    }
    let parts = n.div_ceil(max);
    (0..parts).map(|k| (k * n / parts)..((k + 1) * n / parts)).collect()
}
