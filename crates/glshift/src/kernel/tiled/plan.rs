//! The tiling of a request and its round-robin schedule of tile pairs.

use super::request::{one_hot_classes, split_even};
use super::{Request, GROUP, TILE};
use crate::Real;
use ndarray::Array2;

/// one-hot layout.
pub(super) struct Tile {
    pub(super) dom: usize,
    pub(super) class: Option<usize>,
    pub(super) offset: usize,
    pub(super) len: usize,
}

/// The tiling and the pair schedule of a request; also counts FLOPs.
pub(in crate::kernel) struct Plan {
    pub(super) tiles: Vec<Tile>,
    /// Per domain, its rows in tile order (rows of no tile — zero label rows, or a domain no
    /// block uses — at the end).
    pub(super) order: Vec<Vec<usize>>,
    pub(super) one_hot: bool,
    /// Rounds of tasks; a task is a list of needed pairs (I ≤ J) processed in order by one
    /// thread, and no tile occurs in two tasks of one round.
    pub(super) rounds: Vec<Vec<Vec<(usize, usize)>>>,
    pub(super) d: usize,
    pub(super) c: usize,
    /// Γ_eff[o][block index] for the blocks in `blocks`.
    pub(super) gamma_eff: Vec<Vec<Option<Array2<f64>>>>,
    /// All blocks (a ≤ b) touched: s_blocks ∪ objective blocks, and whether S is wanted in full.
    pub(super) blocks: Vec<((usize, usize), bool)>,
}

/// Round-robin schedule of all pairs I < J of `b` tiles: b − 1 rounds (b even; one more tile
/// index acting as "bye" when b is odd), each a set of disjoint pairs.
pub(super) fn circle_rounds(b: usize) -> Vec<Vec<(usize, usize)>> {
    if b < 2 {
        return Vec::new();
    }
    let m = b + (b % 2);
    let mut rounds = Vec::with_capacity(m - 1);
    for r in 0..m - 1 {
        let mut pairs = Vec::with_capacity(m / 2);
        let fixed = (r, m - 1);
        pairs.push(fixed);
        for k in 1..m / 2 {
            let i = (r + k) % (m - 1);
            let j = (r + m - 1 - k) % (m - 1);
            pairs.push((i, j));
        }
        rounds.push(
            pairs
                .into_iter()
                .filter(|&(i, j)| i < b && j < b)
                .map(|(i, j)| (i.min(j), i.max(j)))
                .collect(),
        );
    }
    rounds
}

/// The blocks (a ≤ b) a request needs, with whether S is returned in full: its `s_blocks`
/// (full), then every objective's term not among them.
fn request_blocks<T: Real>(req: &Request<T>) -> Vec<((usize, usize), bool)> {
    let n_dom = req.domains.len();
    let mut blocks: Vec<((usize, usize), bool)> = Vec::new();
    let mut add_block = |blk: (usize, usize), full: bool| {
        assert!(blk.0 <= blk.1 && blk.1 < n_dom, "block {blk:?}");
        if let Some(e) = blocks.iter_mut().find(|(k, _)| *k == blk) {
            e.1 |= full;
        } else {
            blocks.push((blk, full));
        }
    };
    for &blk in &req.s_blocks {
        add_block(blk, true);
    }
    for o in &req.objectives {
        for (a, b, _) in &o.terms {
            add_block((*a, *b), false);
        }
    }
    blocks
}

/// Effective Γ per objective and block ([`Objective::gamma_eff`](super::Objective::gamma_eff)).
fn effective_gammas<T: Real>(
    req: &Request<T>,
    blocks: &[((usize, usize), bool)],
    c: usize,
) -> Vec<Vec<Option<Array2<f64>>>> {
    for (_, _, g) in req.objectives.iter().flat_map(|o| &o.terms) {
        assert_eq!(g.dim(), (c, c), "Γ must be c×c");
    }
    req.objectives
        .iter()
        .map(|o| blocks.iter().map(|((a, b), _)| o.gamma_eff(*a, *b)).collect())
        .collect()
}

/// The tiles of every domain a block uses (by class when every Y is one-hot; a row with no
/// class is in no tile), and each domain's row order: its tiles' rows first,
/// then the rows in no tile.
fn tiles_and_order<T: Real>(
    req: &Request<T>,
    used: &[bool],
    classes: Option<&[Vec<usize>]>,
    c: usize,
) -> (Vec<Tile>, Vec<Vec<usize>>) {
    let doms = req.domains;
    let mut tiles = Vec::new();
    let mut order = Vec::with_capacity(doms.len());
    for (a, dm) in doms.iter().enumerate() {
        let n = dm.z.nrows();
        let mut ord: Vec<usize> = Vec::with_capacity(n);
        if used[a] {
            let groups: Vec<(Option<usize>, Vec<usize>)> = match classes {
                Some(cl) => {
                    let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); c];
                    for (i, &k) in cl[a].iter().enumerate() {
                        if k != usize::MAX {
                            by_class[k].push(i);
                        }
                    }
                    by_class.into_iter().enumerate().map(|(k, r)| (Some(k), r)).collect()
                }
                None => vec![(None, (0..n).collect())],
            };
            for (class, rows) in groups {
                for r in split_even(rows.len(), TILE) {
                    tiles.push(Tile { dom: a, class, offset: ord.len(), len: r.len() });
                    ord.extend_from_slice(&rows[r]);
                }
            }
        }
        let mut in_tile = vec![false; n];
        ord.iter().for_each(|&i| in_tile[i] = true);
        ord.extend((0..n).filter(|&i| !in_tile[i]));
        order.push(ord);
    }
    (tiles, order)
}

impl Plan {
    pub(in crate::kernel) fn new<T: Real>(req: &Request<T>) -> Plan {
        let doms = req.domains;
        let d = doms[0].z.ncols();
        let c = doms[0].y.ncols();
        let blocks = request_blocks(req);
        let gamma_eff = effective_gammas(req, &blocks, c);
        let classes: Option<Vec<Vec<usize>>> =
            doms.iter().map(|dm| one_hot_classes(dm.y)).collect();
        let used: Vec<bool> =
            (0..doms.len()).map(|a| blocks.iter().any(|((x, y), _)| *x == a || *y == a)).collect();
        let (tiles, order) = tiles_and_order(req, &used, classes.as_deref(), c);
        let mut plan = Plan {
            tiles,
            order,
            one_hot: classes.is_some(),
            rounds: Vec::new(),
            d,
            c,
            gamma_eff,
            blocks,
        };
        plan.rounds = plan.schedule();
        plan
    }

    /// Groups of GROUP consecutive tiles play the round-robin: a task is a pair of groups,
    /// its tile pairs run in order on one thread (the accumulators of a group stay in
    /// cache across them). The grouping depends on the tile count only, never on threads.
    fn schedule(&self) -> Vec<Vec<Vec<(usize, usize)>>> {
        let b = self.tiles.len();
        let g = (b / 32).clamp(1, GROUP);
        let groups: Vec<std::ops::Range<usize>> =
            (0..b).step_by(g).map(|s| s..(s + g).min(b)).collect();
        let task = |ga: usize, gb: usize| -> Vec<(usize, usize)> {
            let mut pairs = Vec::new();
            for i in groups[ga].clone() {
                for j in groups[gb].clone().filter(|&j| j >= i) {
                    if self.needed(i, j) {
                        pairs.push((i, j));
                    }
                }
            }
            pairs
        };
        let mut rounds: Vec<Vec<Vec<(usize, usize)>>> = circle_rounds(groups.len())
            .into_iter()
            .map(|r| {
                r.into_iter().map(|(x, y)| task(x, y)).filter(|t| !t.is_empty()).collect::<Vec<_>>()
            })
            .filter(|r| !r.is_empty())
            .collect();
        rounds.push((0..groups.len()).map(|x| task(x, x)).filter(|t| !t.is_empty()).collect());
        rounds
    }

    pub(super) fn block_index(&self, i: usize, j: usize) -> Option<usize> {
        let key = (self.tiles[i].dom, self.tiles[j].dom);
        self.blocks.iter().position(|(k, _)| *k == key)
    }

    /// γ of objective `o` for the one-hot tile pair (i, j), or None when the objective has no
    /// term on that block.
    pub(super) fn gamma(&self, o: usize, blk: usize, i: usize, j: usize) -> f64 {
        match (&self.gamma_eff[o][blk], self.tiles[i].class, self.tiles[j].class) {
            (Some(g), Some(k), Some(l)) => g[[k, l]],
            _ => 0.0,
        }
    }

    pub(super) fn needed(&self, i: usize, j: usize) -> bool {
        let Some(blk) = self.block_index(i, j) else {
            return false;
        };
        if self.blocks[blk].1 || !self.one_hot {
            return true;
        }
        (0..self.gamma_eff.len()).any(|o| self.gamma(o, blk, i, j) != 0.0)
    }

    /// Objectives with a non-zero weight on the pair.
    pub(super) fn active_objectives(&self, blk: usize, i: usize, j: usize) -> Vec<usize> {
        (0..self.gamma_eff.len())
            .filter(|&o| {
                if self.one_hot {
                    self.gamma(o, blk, i, j) != 0.0
                } else {
                    self.gamma_eff[o][blk].as_ref().is_some_and(|g| g.iter().any(|&v| v != 0.0))
                }
            })
            .collect()
    }

    /// Floating-point operations of the request: per tile pair (p×q rows) 2pqd for Z_I Z_Jᵀ,
    /// 7pq for the Gaussian (3 for the distance, 1 scale, exp counted as 1, row and column
    /// sums), and when a gradient is needed 2pqd for K Z_J, 2pqd for Kᵀ Z_I (pairs I ≠ J) and
    /// 2(d + 1) per row and objective for the accumulation; with soft labels in addition
    /// 2pqc + 2pc² for S and, per objective, 2pc² + 2pqc + 3pq for H. Plus O(n(d + c)) for
    /// centring, norms and the final assembly (3d per row and objective).
    pub(in crate::kernel) fn flops(&self) -> f64 {
        let (d, c) = (self.d as f64, self.c as f64);
        let mut f = 0.0;
        for &(i, j) in self.rounds.iter().flatten().flatten() {
            let (p, q) = (self.tiles[i].len as f64, self.tiles[j].len as f64);
            let off = i != j;
            let blk = self.block_index(i, j).expect("needed pair has a block");
            let n_obj = self.active_objectives(blk, i, j).len() as f64;
            f += 2.0 * p * q * d + 7.0 * p * q;
            let sides = if off { p + q } else { p };
            if self.one_hot {
                if n_obj > 0.0 {
                    f += 2.0 * p * q * d * if off { 2.0 } else { 1.0 };
                    f += n_obj * sides * 2.0 * (d + 1.0);
                }
            } else {
                f += 2.0 * p * q * c + 2.0 * p * c * c;
                f += n_obj
                    * (2.0 * p * c * c
                        + 2.0 * p * q * c
                        + 3.0 * p * q
                        + 2.0 * p * q * d * if off { 2.0 } else { 1.0 }
                        + sides * (d + 1.0));
            }
        }
        let n: f64 = self.tiles.iter().map(|t| t.len as f64).sum();
        f + n * (3.0 * d) * (1.0 + self.gamma_eff.len() as f64)
    }
}
