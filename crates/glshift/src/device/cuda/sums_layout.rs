//! Where the device's kernel sums put each row, and which pairs of row tiles they compute.
//!
//! With one-hot labels (in every domain) each domain's rows are sorted by class on the device
//! (`gather_rows`; rows of no class are left out: they add nothing to S and get no gradient),
//! so that a tile holds one class or the two at a boundary. A tile pair (I, J) of block (a, b)
//! is computed only where S^{ab} is wanted in full, or where some objective's Γ_eff on (a, b)
//! is non-zero between a class of I and a class of J. J_TU with the linear label kernel has a
//! diagonal Γ, so it reads only pairs of tiles that share a class: about 1/c of them, as on the
//! CPU (`kernel::tiled::plan`, which tiles by class). With soft labels rows keep their order,
//! every tile holds every class, and every pair of a needed block is computed.

use std::ops::Range;

use ndarray::{Array2, ArrayView2};

use crate::kernel::tiled::request::{one_hot_classes, split_even, Objective};

/// The device's row indices are floats (`gather_rows`, `scatter_add_rows`): exact below 2^24.
pub(super) const MAX_ORDERED_ROWS: usize = 1 << 24;

/// One domain's rows on the device.
pub(super) struct DomLayout {
    /// The caller's row behind each device row, where rows are sorted by class.
    pub(super) order: Option<Vec<usize>>,
    /// Rows on the device.
    pub(super) n: usize,
    /// Tiles: a range of device rows, and which classes it holds.
    tiles: Vec<(Range<usize>, Vec<bool>)>,
}

/// One tile pair to compute.
pub(super) struct PairPlan {
    /// Its block, an index of [`Layout::blocks`].
    pub(super) block: usize,
    pub(super) ri: Range<usize>,
    pub(super) rj: Range<usize>,
    /// A pair I < J of a block with a = b, standing for (J, I) as well.
    pub(super) mirrored: bool,
    /// The objectives whose Γ_eff is non-zero somewhere between the two tiles' classes.
    pub(super) objectives: Vec<usize>,
}

/// The rows, tiles and tile pairs of one request.
pub(super) struct Layout {
    pub(super) doms: Vec<DomLayout>,
    /// The blocks (a, b) the request needs: its S blocks and every objective's terms, sorted.
    pub(super) blocks: Vec<(usize, usize)>,
    /// Per block, Γ_eff of every objective with a term there.
    pub(super) gammas: Vec<Vec<(usize, Array2<f64>)>>,
    pub(super) pairs: Vec<PairPlan>,
    /// The longest tile (at least 1).
    pub(super) tile: usize,
}

impl Layout {
    /// The layout of domains with these `labels` (n_a × c each), S blocks and objectives, with
    /// tiles of at most `tile` rows. Errors: a domain too long for the device's row order.
    pub(super) fn new(
        labels: &[ArrayView2<f32>],
        s_blocks: &[(usize, usize)],
        objectives: &[Objective],
        tile: usize,
    ) -> Result<Layout, String> {
        let c = labels.first().map_or(0, |y| y.ncols());
        let classes: Option<Vec<Vec<usize>>> = labels.iter().map(|y| one_hot_classes(*y)).collect();
        let mut doms = Vec::with_capacity(labels.len());
        for (a, y) in labels.iter().enumerate() {
            let n = y.nrows();
            doms.push(match &classes {
                Some(cl) => {
                    sorted_domain(&cl[a], c, tile).map_err(|e| format!("domain {a}: {e}"))?
                }
                None => DomLayout {
                    order: None,
                    n,
                    tiles: split_even(n, tile.max(1))
                        .into_iter()
                        .map(|r| (r, vec![true; c]))
                        .collect(),
                },
            });
        }
        let mut blocks: Vec<(usize, usize)> = s_blocks.to_vec();
        blocks.extend(objectives.iter().flat_map(|o| o.terms.iter().map(|(a, b, _)| (*a, *b))));
        blocks.sort_unstable();
        blocks.dedup();
        let gammas: Vec<Vec<(usize, Array2<f64>)>> = blocks
            .iter()
            .map(|&(a, b)| {
                objectives
                    .iter()
                    .enumerate()
                    .filter_map(|(o, obj)| obj.gamma_eff(a, b).map(|g| (o, g)))
                    .collect()
            })
            .collect();
        let mut pairs = Vec::new();
        for (block, &(a, b)) in blocks.iter().enumerate() {
            let full = s_blocks.contains(&(a, b));
            for (i, (ri, ci)) in doms[a].tiles.iter().enumerate() {
                for (j, (rj, cj)) in
                    doms[b].tiles.iter().enumerate().filter(|(j, _)| a != b || i <= *j)
                {
                    let objectives: Vec<usize> = gammas[block]
                        .iter()
                        .filter(|(_, g)| touches(g, ci, cj))
                        .map(|(o, _)| *o)
                        .collect();
                    if full || !objectives.is_empty() {
                        pairs.push(PairPlan {
                            block,
                            ri: ri.clone(),
                            rj: rj.clone(),
                            mirrored: a == b && i < j,
                            objectives,
                        });
                    }
                }
            }
        }
        let tile = doms
            .iter()
            .flat_map(|d| d.tiles.iter().map(|(r, _)| r.len()))
            .max()
            .unwrap_or(0)
            .max(1);
        Ok(Layout { doms, blocks, gammas, pairs, tile })
    }

    /// Pairs of rows the layout's tile pairs span (a mirrored pair counted once).
    #[cfg(test)]
    pub(super) fn row_pairs(&self) -> u64 {
        self.pairs.iter().map(|p| (p.ri.len() * p.rj.len()) as u64).sum()
    }
}

/// Whether Γ_eff `g` is non-zero between a class of `ci` and a class of `cj`.
fn touches(g: &Array2<f64>, ci: &[bool], cj: &[bool]) -> bool {
    g.indexed_iter().any(|((k, l), &v)| v != 0.0 && ci[k] && cj[l])
}

/// A one-hot domain (`classes` per row, `usize::MAX` for none) sorted by class, then tiled.
fn sorted_domain(classes: &[usize], c: usize, tile: usize) -> Result<DomLayout, String> {
    if classes.len() >= MAX_ORDERED_ROWS {
        return Err(format!(
            "{} rows: the device sorts at most {} rows by class",
            classes.len(),
            MAX_ORDERED_ROWS - 1
        ));
    }
    let mut order: Vec<usize> = (0..classes.len()).filter(|&i| classes[i] < c).collect();
    order.sort_by_key(|&i| classes[i]);
    let tiles = split_even(order.len(), tile.max(1))
        .into_iter()
        .map(|r| {
            let mut held = vec![false; c];
            order[r.clone()].iter().for_each(|&i| held[classes[i]] = true);
            (r, held)
        })
        .collect();
    Ok(DomLayout { n: order.len(), order: Some(order), tiles })
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;

    use super::Layout;
    use crate::kernel::tiled::request::Objective;

    /// One-hot rows in interleaved classes (row i in class i mod c, every fifth row without a
    /// class) are sorted by class; a diagonal Γ alone reads only tile pairs that share a class,
    /// a dense Γ or a full S block reads all of them, and soft labels keep the rows' order.
    #[test]
    fn one_hot_rows_are_sorted_by_class_and_a_diagonal_gamma_skips_pairs() {
        let (n, c) = (400, 4);
        let y = Array2::from_shape_fn((n, c), |(i, k)| (i % 5 != 4 && i % c == k) as u8 as f32);
        let layout_of = |y: &Array2<f32>, g: &Array2<f64>, full: bool| {
            let s_blocks = if full { vec![(0, 0)] } else { vec![] };
            Layout::new(&[y.view()], &s_blocks, &[Objective { terms: vec![(0, 0, g.clone())] }], 40)
                .unwrap()
        };
        let diag = Array2::from_diag(&ndarray::arr1(&[1.0, 2.0, 3.0, 4.0]));
        let layout = layout_of(&y, &diag, false);
        let order = layout.doms[0].order.as_ref().expect("one-hot rows are sorted");
        assert_eq!(order.len(), 320, "the 80 rows without a class are left out");
        assert!(order.windows(2).all(|w| w[0] % c <= w[1] % c), "sorted by class");
        // 8 tiles of 40 rows, two per class: 3 pairs I <= J per class.
        assert_eq!(layout.pairs.len(), 4 * 3);
        assert_eq!(layout.row_pairs(), 4 * 3 * 1600);
        let all = 8 * 9 / 2;
        assert_eq!(layout_of(&y, &Array2::ones((c, c)), false).pairs.len(), all);
        assert_eq!(layout_of(&y, &diag, true).pairs.len(), all);
        let layout = layout_of(&y.mapv(|v| v * 0.5 + 0.1), &diag, false);
        assert!(layout.doms[0].order.is_none());
        assert_eq!(layout.pairs.len(), 10 * 11 / 2);
    }

    /// At the VisDA-2017 shape (152 397 source and 55 388 target rows in 12 classes of even
    /// size, tiles of 4 096 rows), J_TU's diagonal Γ reads about the share of row pairs of one
    /// class: under a fifth of J_DU's dense Γ over the same rows. Prints both counts.
    #[test]
    fn at_the_visda_shape_j_tu_reads_a_fraction_of_the_row_pairs() {
        let (ns, nt, c) = (152_397, 55_388, 12);
        let y = |n: usize| Array2::from_shape_fn((n, c), |(i, k)| (i % c == k) as u8 as f32);
        let (ys, yt) = (y(ns), y(nt));
        let count = |g: Array2<f64>| {
            let terms = vec![(0, 0, g.clone()), (1, 1, g.clone()), (0, 1, g)];
            let layout =
                Layout::new(&[ys.view(), yt.view()], &[], &[Objective { terms }], 4096).unwrap();
            (layout.pairs.len(), layout.row_pairs())
        };
        let (tu, du) = (count(Array2::eye(c)), count(Array2::ones((c, c))));
        eprintln!("J_TU-shaped: {} tile pairs, {:.3e} row pairs; J_DU-shaped: {} tile pairs, {:.3e} row pairs", tu.0, tu.1 as f64, du.0, du.1 as f64);
        // Every pair of rows once; a diagonal tile pair (I, I) spans all of its p² pairs.
        let all = ((ns + nt) * (ns + nt) / 2) as u64;
        assert!(du.1 >= all && du.1 <= all * 103 / 100, "every pair once: {} vs {all}", du.1);
        assert!(tu.1 * 5 < du.1, "{} of {}", tu.1, du.1);
    }
}
