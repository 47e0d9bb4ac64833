//! The fused tiled kernel sums: every O(n²) quantity of MCMD, J_DU and J_TU in one pass over
//! tiles of the Gaussian kernel matrix, which is never stored.
//!
//! A request names labelled domains (Z_a, Y_a), the blocks S^{ab} = Y_aᵀ K^{ab} Y_b (a ≤ b)
//! wanted, and objectives ℓ_o = Σ_{(a,b)} ⟨Γ_o^{ab}, S^{ab}⟩. Every MUL objective has this form
//! (`mcmd-math.md`: J_TU and J_DU are linear in G = WᵀSW, hence in S, with Γ = W (∂J/∂G) Wᵀ),
//! so one pass gives the values and, because Γ does not depend on S, the gradients as well:
//!
//!   ∂ℓ/∂z_i = −(2/h) Σ_j H_ij (z_i − z_j),  H = (Y_a Γ_eff Y_bᵀ) ∘ K,
//!
//! with Γ_eff = Γ + Γᵀ inside one domain (both orders of a pair) and Γ across domains.
//!
//! Tiles. Rows of every domain are cut into tiles of at most [`TILE`] rows. When every label row
//! is one-hot (or all zero), rows are grouped by class first and a tile holds one class only;
//! then Y_aᵀ K Y_b of a tile pair is one number (the sum of the tile) and H = γ·K with a scalar
//! γ = Γ_eff[k, l], so the gradient products K Z_J and Kᵀ Z_I are shared by all objectives
//! (J_TU and J_DU together cost one pass), and tile pairs whose γ is 0 for every objective are
//! skipped (a diagonal Γ, e.g. J_TU with the linear label kernel, only needs same-class pairs).
//! Otherwise (soft labels) tiles are contiguous row ranges and H is formed per objective.
//!
//! Work per tile pair (I, J), p×q rows: one GEMM Z_I Z_Jᵀ (2pqd), the Gaussian with row and
//! column sums, then K Z_J and Kᵀ Z_I (2pqd each); Z rows are centred on the pooled mean
//! first (K and the gradient are translation invariant, and the expansion
//! ‖a‖² + ‖b‖² − 2⟨a, b⟩ loses less precision near the origin). Within one domain only pairs
//! I ≤ J are visited (half the tiles), the pair (I, J) serving both (I, J) and (J, I).
//! Memory: O(n(d + c)) for inputs and outputs plus per thread O(TILE·(TILE + d)).
//!
//! Parallelism and determinism: tiles are grouped (≤ 4 consecutive tiles) and pairs of groups
//! are processed in rounds of a round-robin tournament ("circle method"): within a round every
//! group occurs in at most one task, so the tasks run in parallel (rayon) while each row's
//! gradient receives its contributions in a fixed order (round, then the task's own order);
//! per-pair parts of S are added in that order after each round. Results are therefore
//! identical for any number of threads.

use super::gemm::gemm;
use super::simd::gauss_tile;
use crate::Real;
use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut2};
use rayon::prelude::*;
use std::sync::Mutex;

/// Maximum rows of a tile.
pub(super) const TILE: usize = 256;
/// Most tiles per group of the round-robin schedule.
const GROUP: usize = 4;

/// One labelled block of rows: `z` n×d, `y` n×c.
#[derive(Clone, Copy)]
pub(super) struct Domain<'a, T> {
    pub z: ArrayView2<'a, T>,
    pub y: ArrayView2<'a, T>,
}

/// ℓ = Σ over `terms` (a, b, Γ^{ab}) of ⟨Γ^{ab}, S^{ab}⟩, a ≤ b, Γ c×c.
#[derive(Clone, Debug, Default)]
pub(super) struct Objective {
    pub terms: Vec<(usize, usize, Array2<f64>)>,
}

/// What to compute.
pub(super) struct Request<'r, 'a, T> {
    pub domains: &'r [Domain<'a, T>],
    /// Blocks (a ≤ b) whose S is returned in full.
    pub s_blocks: Vec<(usize, usize)>,
    pub objectives: Vec<Objective>,
    pub h: f64,
}

/// Results of a request.
pub(super) struct Output<T> {
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
        &self
            .s
            .iter()
            .find(|(k, _)| *k == (a, b))
            .expect("S block was requested")
            .1
    }
}

/// A tile: rows `order[dom][offset..offset + len]` of one domain, all of class `class` in the
/// one-hot layout.
struct Tile {
    dom: usize,
    class: Option<usize>,
    offset: usize,
    len: usize,
}

/// The tiling and the pair schedule of a request; also counts FLOPs.
pub(super) struct Plan {
    tiles: Vec<Tile>,
    /// Per domain, its rows in tile order (rows of no tile — zero label rows, or a domain no
    /// block uses — at the end).
    order: Vec<Vec<usize>>,
    one_hot: bool,
    /// Rounds of tasks; a task is a list of needed pairs (I ≤ J) processed in order by one
    /// thread, and no tile occurs in two tasks of one round.
    rounds: Vec<Vec<Vec<(usize, usize)>>>,
    d: usize,
    c: usize,
    /// Γ_eff[o][block index] for the blocks in `blocks`.
    gamma_eff: Vec<Vec<Option<Array2<f64>>>>,
    /// All blocks (a ≤ b) touched: s_blocks ∪ objective blocks, and whether S is wanted in full.
    blocks: Vec<((usize, usize), bool)>,
}

fn split_even(n: usize, max: usize) -> Vec<std::ops::Range<usize>> {
    if n == 0 {
        return Vec::new();
    }
    let parts = n.div_ceil(max);
    (0..parts)
        .map(|k| (k * n / parts)..((k + 1) * n / parts))
        .collect()
}

/// Class of every row when `y` is one-hot (entries 0 or 1, at most one 1 per row); None else.
fn one_hot_classes<T: Real>(y: ArrayView2<T>) -> Option<Vec<usize>> {
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

/// Round-robin schedule of all pairs I < J of `b` tiles: b − 1 rounds (b even; one more tile
/// index acting as "bye" when b is odd), each a set of disjoint pairs.
fn circle_rounds(b: usize) -> Vec<Vec<(usize, usize)>> {
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

impl Plan {
    pub fn new<T: Real>(req: &Request<T>) -> Plan {
        let doms = req.domains;
        let d = doms[0].z.ncols();
        let c = doms[0].y.ncols();
        // Blocks and effective Γ.
        let mut blocks: Vec<((usize, usize), bool)> = Vec::new();
        let mut add_block = |blk: (usize, usize), full: bool| {
            assert!(blk.0 <= blk.1 && blk.1 < doms.len(), "block {blk:?}");
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
        let gamma_eff: Vec<Vec<Option<Array2<f64>>>> = req
            .objectives
            .iter()
            .map(|o| {
                blocks
                    .iter()
                    .map(|((a, b), _)| {
                        let mut acc: Option<Array2<f64>> = None;
                        for (ta, tb, g) in o.terms.iter().filter(|t| (t.0, t.1) == (*a, *b)) {
                            assert_eq!(g.dim(), (c, c), "Γ must be c×c");
                            let e = if ta == tb { g + &g.t() } else { g.clone() };
                            acc = Some(match acc {
                                Some(x) => x + e,
                                None => e,
                            });
                        }
                        acc
                    })
                    .collect()
            })
            .collect();
        // Tiles.
        let classes: Option<Vec<Vec<usize>>> =
            doms.iter().map(|dm| one_hot_classes(dm.y)).collect();
        let one_hot = classes.is_some();
        let used: Vec<bool> = (0..doms.len())
            .map(|a| blocks.iter().any(|((x, y), _)| *x == a || *y == a))
            .collect();
        let mut tiles = Vec::new();
        let mut order = Vec::with_capacity(doms.len());
        for (a, dm) in doms.iter().enumerate() {
            let n = dm.z.nrows();
            let mut ord: Vec<usize> = Vec::with_capacity(n);
            if used[a] {
                let groups: Vec<(Option<usize>, Vec<usize>)> = match &classes {
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
        let mut plan = Plan {
            tiles,
            order,
            one_hot,
            rounds: Vec::new(),
            d,
            c,
            gamma_eff,
            blocks,
        };
        // Groups of GROUP consecutive tiles play the round-robin: a task is a pair of groups,
        // its tile pairs run in order on one thread (the accumulators of a group stay in
        // cache across them). The grouping depends on the tile count only, never on threads.
        let b = plan.tiles.len();
        let g = (b / 32).clamp(1, GROUP);
        let groups: Vec<std::ops::Range<usize>> = (0..b).step_by(g).map(|s| s..(s + g).min(b)).collect();
        let task = |ga: usize, gb: usize| -> Vec<(usize, usize)> {
            let mut pairs = Vec::new();
            for i in groups[ga].clone() {
                for j in groups[gb].clone().filter(|&j| j >= i) {
                    if plan.needed(i, j) {
                        pairs.push((i, j));
                    }
                }
            }
            pairs
        };
        let mut rounds: Vec<Vec<Vec<(usize, usize)>>> = circle_rounds(groups.len())
            .into_iter()
            .map(|r| r.into_iter().map(|(x, y)| task(x, y)).filter(|t| !t.is_empty()).collect::<Vec<_>>())
            .filter(|r| !r.is_empty())
            .collect();
        rounds.push((0..groups.len()).map(|x| task(x, x)).filter(|t| !t.is_empty()).collect());
        plan.rounds = rounds;
        plan
    }

    fn block_index(&self, i: usize, j: usize) -> Option<usize> {
        let key = (self.tiles[i].dom, self.tiles[j].dom);
        self.blocks.iter().position(|(k, _)| *k == key)
    }

    /// γ of objective `o` for the one-hot tile pair (i, j), or None when the objective has no
    /// term on that block.
    fn gamma(&self, o: usize, blk: usize, i: usize, j: usize) -> f64 {
        match (&self.gamma_eff[o][blk], self.tiles[i].class, self.tiles[j].class) {
            (Some(g), Some(k), Some(l)) => g[[k, l]],
            _ => 0.0,
        }
    }

    fn needed(&self, i: usize, j: usize) -> bool {
        let Some(blk) = self.block_index(i, j) else {
            return false;
        };
        if self.blocks[blk].1 || !self.one_hot {
            return true;
        }
        (0..self.gamma_eff.len()).any(|o| self.gamma(o, blk, i, j) != 0.0)
    }

    /// Objectives with a non-zero weight on the pair.
    fn active_objectives(&self, blk: usize, i: usize, j: usize) -> Vec<usize> {
        (0..self.gamma_eff.len())
            .filter(|&o| {
                if self.one_hot {
                    self.gamma(o, blk, i, j) != 0.0
                } else {
                    self.gamma_eff[o][blk]
                        .as_ref()
                        .is_some_and(|g| g.iter().any(|&v| v != 0.0))
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
    pub fn flops(&self) -> f64 {
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

/// Per-thread scratch buffers (contents fully overwritten on every use).
struct Scratch<T> {
    k: Vec<T>,
    hm: Vec<T>,
    rs: Vec<T>,
    cs: Vec<T>,
    p: Vec<T>,
    q: Vec<T>,
    yg: Vec<T>,
    ky: Vec<T>,
}

impl<T> Default for Scratch<T> {
    fn default() -> Self {
        Scratch { k: Vec::new(), hm: Vec::new(), rs: Vec::new(), cs: Vec::new(), p: Vec::new(), q: Vec::new(), yg: Vec::new(), ky: Vec::new() }
    }
}

fn sized<T: Real>(v: &mut Vec<T>, len: usize) -> &mut [T] {
    v.clear();
    v.resize(len, T::zero());
    &mut v[..]
}

/// The gradient accumulators of one tile, per objective: Σ γ·(K Z)-parts (rows×d, in tile
/// order) and Σ γ·(row sums of K) per row (f64).
struct TileAcc<'g, T> {
    out: Vec<&'g mut [T]>,
    r: Vec<&'g mut [f64]>,
}

/// Runs a request on the exact tiled path.
pub(super) fn run<T: Real>(req: &Request<T>) -> Output<T> {
    let plan = Plan::new(req);
    run_plan(req, &plan)
}

/// A vector of `len` zeros whose pages are written now, in parallel (see the accumulators).
fn written_zeros<T: Copy + Send + Sync + num_traits::Zero>(len: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(len);
    v.spare_capacity_mut().par_chunks_mut(1 << 14).for_each(|ch| {
        ch.iter_mut().for_each(|x| {
            x.write(T::zero());
        })
    });
    // SAFETY: every element of the capacity was initialised above.
    unsafe { v.set_len(len) };
    v
}

/// Moves row k of `buf` (rows of `d`) to row `dest[k]`, in place (cycle by cycle).
fn permute_rows<T: Copy>(buf: &mut [T], d: usize, dest: &[usize]) {
    if buf.is_empty() || d == 0 {
        return;
    }
    let mut done = vec![false; dest.len()];
    let mut carry = buf[..d].to_vec();
    for start in 0..dest.len() {
        if done[start] || dest[start] == start {
            done[start] = true;
            continue;
        }
        carry.copy_from_slice(&buf[start * d..(start + 1) * d]);
        let mut pos = dest[start];
        while pos != start {
            buf[pos * d..(pos + 1) * d].swap_with_slice(&mut carry);
            done[pos] = true;
            pos = dest[pos];
        }
        buf[start * d..(start + 1) * d].copy_from_slice(&carry);
        done[start] = true;
    }
}

pub(super) fn run_plan<T: Real>(req: &Request<T>, plan: &Plan) -> Output<T> {
    let doms = req.domains;
    let (d, c) = (plan.d, plan.c);
    let n_obj = req.objectives.len();
    // Pooled mean of the rows in tiles (f64).
    let mut mean = Array1::<f64>::zeros(d);
    let mut count = 0usize;
    for t in &plan.tiles {
        for &i in &plan.order[t.dom][t.offset..t.offset + t.len] {
            mean.iter_mut()
                .zip(doms[t.dom].z.row(i))
                .for_each(|(m, v)| *m += v.to_f64_());
        }
        count += t.len;
    }
    if count > 0 {
        mean /= count as f64;
    }
    let mean_t: Vec<T> = mean.iter().map(|&v| T::from_f64_(v)).collect();
    // Centred rows in tile order, and their squared norms.
    let zc: Vec<Vec<T>> = doms
        .iter()
        .zip(&plan.order)
        .map(|(dm, ord)| {
            let mut buf = vec![T::zero(); ord.len() * d];
            buf.par_chunks_mut(d.max(1)).zip(ord.par_iter()).for_each(|(out, &i)| {
                for ((o, &v), &m) in out.iter_mut().zip(dm.z.row(i).iter()).zip(&mean_t) {
                    *o = v - m;
                }
            });
            buf
        })
        .collect();
    let norms: Vec<Vec<T>> = zc
        .iter()
        .map(|buf| {
            buf.chunks_exact(d.max(1))
                .map(|row| T::from_f64_(row.iter().map(|v| v.to_f64_() * v.to_f64_()).sum()))
                .collect()
        })
        .collect();

    // Accumulators in tile order (they become the outputs), split per tile.
    // Zeros written explicitly (not calloc'ed): the first access inside the rounds is a
    // read-modify-write, which on a calloc'ed page is a copy-on-write fault of the shared zero
    // page plus a TLB-flush interrupt to the other core.
    let mut acc: Vec<Vec<Vec<T>>> = (0..n_obj)
        .map(|_| doms.iter().map(|dm| written_zeros(dm.z.nrows() * d)).collect())
        .collect();
    let mut r_acc: Vec<Vec<Vec<f64>>> = (0..n_obj)
        .map(|_| doms.iter().map(|dm| written_zeros(dm.z.nrows())).collect())
        .collect();
    let mut s_parts: Vec<Array2<f64>> = plan.blocks.iter().map(|_| Array2::zeros((c, c))).collect();
    {
        let mut accs: Vec<TileAcc<T>> = plan
            .tiles
            .iter()
            .map(|_| TileAcc { out: Vec::with_capacity(n_obj), r: Vec::with_capacity(n_obj) })
            .collect();
        for (acc_o, r_o) in acc.iter_mut().zip(r_acc.iter_mut()) {
            for (a, (buf, rbuf)) in acc_o.iter_mut().zip(r_o.iter_mut()).enumerate() {
                let (mut rest, mut rrest) = (&mut buf[..], &mut rbuf[..]);
                for (t, tile) in plan.tiles.iter().enumerate().filter(|(_, t)| t.dom == a) {
                    let (head, tail) = std::mem::take(&mut rest).split_at_mut(tile.len * d);
                    let (rhead, rtail) = std::mem::take(&mut rrest).split_at_mut(tile.len);
                    accs[t].out.push(head);
                    accs[t].r.push(rhead);
                    rest = tail;
                    rrest = rtail;
                }
            }
        }
        let accs: Vec<Mutex<TileAcc<T>>> = accs.into_iter().map(Mutex::new).collect();

        let threads = rayon::current_num_threads().max(1);
        let scratch: Vec<Mutex<Scratch<T>>> = (0..threads).map(|_| Mutex::new(Scratch::default())).collect();
        let ctx = Ctx { req, plan, zc: &zc, norms: &norms, accs: &accs };
        for round in &plan.rounds {
            let parts: Vec<Vec<SPart>> = round
                .par_iter()
                .map(|task| {
                    let slot = rayon::current_thread_index().unwrap_or(0) % threads;
                    let mut sc = scratch[slot].lock().expect("scratch lock");
                    task.iter().map(|&(i, j)| ctx.pair(&mut sc, i, j)).collect()
                })
                .collect();
            for (&(i, j), part) in round.iter().flatten().zip(parts.into_iter().flatten()) {
                let blk = plan.block_index(i, j).expect("block");
                match part {
                    SPart::Entries(e) => e.into_iter().flatten().for_each(|(k, l, v)| s_parts[blk][[k, l]] += v),
                    SPart::Dense(m) => s_parts[blk] += &m,
                }
            }
        }
        // Final assembly: ∂ℓ/∂z_i = −(2/h)(R_i z̃_i − Σ (K Z)-parts).
        let scale = -2.0 / req.h;
        accs.into_par_iter().zip(plan.tiles.par_iter()).for_each(|(acc, t)| {
            let acc = acc.into_inner().expect("tile lock");
            let z = &zc[t.dom][t.offset * d..(t.offset + t.len) * d];
            for (out, r) in acc.out.into_iter().zip(acc.r) {
                for ((orow, zrow), &rv) in out.chunks_exact_mut(d.max(1)).zip(z.chunks_exact(d.max(1))).zip(r.iter()) {
                    for (g, &zv) in orow.iter_mut().zip(zrow) {
                        *g = T::from_f64_(scale * (rv * zv.to_f64_() - g.to_f64_()));
                    }
                }
            }
        });
    }
    drop(zc);
    // Back to the original row order.
    let grads: Vec<Vec<Array2<T>>> = acc
        .into_iter()
        .map(|acc_o| {
            acc_o
                .into_iter()
                .enumerate()
                .map(|(a, mut buf)| {
                    permute_rows(&mut buf, d, &plan.order[a]);
                    Array2::from_shape_vec((doms[a].z.nrows(), d), buf).expect("n×d")
                })
                .collect()
        })
        .collect();
    let values = req
        .objectives
        .iter()
        .map(|o| {
            o.terms
                .iter()
                .map(|(a, b, g)| {
                    let blk = plan.blocks.iter().position(|(k, _)| *k == (*a, *b)).expect("block");
                    (g * &s_parts[blk]).sum()
                })
                .sum()
        })
        .collect();
    Output {
        s: plan.blocks.iter().map(|(k, _)| *k).zip(s_parts).collect(),
        values,
        grads,
    }
}

/// A tile pair's part of S: at most two entries (one-hot tiles) or a dense c×c matrix.
enum SPart {
    Entries([Option<(usize, usize, f64)>; 2]),
    Dense(Array2<f64>),
}

struct Ctx<'x, 'r, 'a, 'g, T> {
    req: &'x Request<'r, 'a, T>,
    plan: &'x Plan,
    zc: &'x [Vec<T>],
    norms: &'x [Vec<T>],
    accs: &'x [Mutex<TileAcc<'g, T>>],
}

impl<T: Real> Ctx<'_, '_, '_, '_, T> {
    /// Centred rows (len×d) and norms of tile `t`.
    fn tile(&self, t: usize) -> (ArrayView2<'_, T>, &[T]) {
        let tile = &self.plan.tiles[t];
        let d = self.plan.d;
        let z = &self.zc[tile.dom][tile.offset * d..(tile.offset + tile.len) * d];
        (
            ArrayView2::from_shape((tile.len, d), z).expect("tile shape"),
            &self.norms[tile.dom][tile.offset..tile.offset + tile.len],
        )
    }

    /// Label rows of tile `t` (soft layout: tiles are row ranges in the original order).
    fn labels(&self, t: usize) -> ArrayView2<'_, T> {
        let tile = &self.plan.tiles[t];
        let first = self.plan.order[tile.dom][tile.offset];
        self.req.domains[tile.dom]
            .y
            .slice(ndarray::s![first..first + tile.len, ..])
    }

    /// Processes tile pair (i, j), i ≤ j: adds to the gradient accumulators of both tiles and
    /// returns this pair's part of S for its block.
    fn pair(&self, sc: &mut Scratch<T>, i: usize, j: usize) -> SPart {
        let plan = self.plan;
        let (d, c) = (plan.d, plan.c);
        let (ti, tj) = (&plan.tiles[i], &plan.tiles[j]);
        let (p, q) = (ti.len, tj.len);
        let off = i != j;
        let same_dom = ti.dom == tj.dom;
        let blk = plan.block_index(i, j).expect("needed pair has a block");
        let objs = plan.active_objectives(blk, i, j);

        let Scratch { k, hm, rs, cs, p: pm, q: qm, yg, ky } = sc;
        let (za, na) = self.tile(i);
        let (zb, nb) = self.tile(j);
        let kbuf = sized(k, p * q);
        gemm(
            ArrayViewMut2::from_shape((p, q), &mut kbuf[..]).expect("tile shape"),
            za,
            zb.t(),
            T::one(),
            false,
        );
        let want_sums = plan.one_hot;
        let rsb = sized(rs, if want_sums { p } else { 0 });
        let csb = sized(cs, if want_sums && off { q } else { 0 });
        gauss_tile(kbuf, na, nb, self.req.h, rsb, csb);
        let kv = ArrayView2::from_shape((p, q), &kbuf[..]).expect("tile shape");

        if plan.one_hot {
            let total: f64 = rsb.iter().map(|v| v.to_f64_()).sum();
            let (m, l) = (ti.class.expect("one-hot tile"), tj.class.expect("one-hot tile"));
            let s_part = SPart::Entries([Some((m, l, total)), (same_dom && off).then_some((l, m, total))]);
            let gammas: Vec<(usize, f64)> = objs.iter().map(|&o| (o, plan.gamma(o, blk, i, j))).collect();
            match gammas.len() {
                0 => {}
                1 => {
                    // One objective: the products go straight into its accumulators.
                    let (o, g) = gammas[0];
                    self.add_product(i, o, g, kv, zb, rsb);
                    if off {
                        self.add_product(j, o, g, kv.t(), za, csb);
                    }
                }
                _ => {
                    let pbuf = sized(pm, p * d);
                    gemm(ArrayViewMut2::from_shape((p, d), &mut pbuf[..]).expect("shape"), kv, zb, T::one(), false);
                    self.accumulate(i, &gammas, pbuf, rsb);
                    if off {
                        let qbuf = sized(qm, q * d);
                        gemm(ArrayViewMut2::from_shape((q, d), &mut qbuf[..]).expect("shape"), kv.t(), za, T::one(), false);
                        self.accumulate(j, &gammas, qbuf, csb);
                    }
                }
            }
            return s_part;
        }

        // Soft labels: S part = Y_Iᵀ (K Y_J); per objective H = (Y_I Γ_eff Y_Jᵀ) ∘ K.
        let mut s_part = Array2::<f64>::zeros((c, c));
        let (ya, yb) = (self.labels(i), self.labels(j));
        let kyb = sized(ky, p * c);
        gemm(ArrayViewMut2::from_shape((p, c), &mut kyb[..]).expect("shape"), kv, yb, T::one(), false);
        let mut part_t = Array2::<T>::zeros((c, c));
        gemm(
            part_t.view_mut(),
            ya.t(),
            ArrayView2::from_shape((p, c), &kyb[..]).expect("shape"),
            T::one(),
            false,
        );
        s_part.zip_mut_with(&part_t, |s, v| *s += v.to_f64_());
        if same_dom && off {
            s_part.zip_mut_with(&part_t.t(), |s, v| *s += v.to_f64_());
        }
        for &o in &objs {
            let g = plan.gamma_eff[o][blk].as_ref().expect("active objective");
            let gt = g.mapv(T::from_f64_);
            let ygb = sized(yg, p * c);
            gemm(ArrayViewMut2::from_shape((p, c), &mut ygb[..]).expect("shape"), ya, gt.view(), T::one(), false);
            let hb = sized(hm, p * q);
            gemm(
                ArrayViewMut2::from_shape((p, q), &mut hb[..]).expect("shape"),
                ArrayView2::from_shape((p, c), &ygb[..]).expect("shape"),
                yb.t(),
                T::one(),
                false,
            );
            let rsb = sized(rs, p);
            let csb = sized(cs, if off { q } else { 0 });
            for (r, (hrow, krow)) in hb.chunks_exact_mut(q).zip(kbuf.chunks_exact(q)).enumerate() {
                let mut sum = T::zero();
                for (jj, (hv, &kv_)) in hrow.iter_mut().zip(krow).enumerate() {
                    *hv = *hv * kv_;
                    sum = sum + *hv;
                    if off {
                        csb[jj] = csb[jj] + *hv;
                    }
                }
                rsb[r] = sum;
            }
            let hv = ArrayView2::from_shape((p, q), &hb[..]).expect("shape");
            self.add_product(i, o, 1.0, hv, zb, rsb);
            if off {
                self.add_product(j, o, 1.0, hv.t(), za, csb);
            }
        }
        SPart::Dense(s_part)
    }

    /// acc_o(tile) += γ·m·z and r_o(tile) += γ·sums (one GEMM into the accumulator).
    fn add_product(&self, tile: usize, o: usize, g: f64, m: ArrayView2<T>, z: ArrayView2<T>, sums: &[T]) {
        let d = self.plan.d;
        let mut acc = self.accs[tile].lock().expect("tile lock");
        let acc = &mut *acc;
        let rows = m.nrows();
        gemm(
            ArrayViewMut2::from_shape((rows, d), &mut acc.out[o][..]).expect("shape"),
            m,
            z,
            T::from_f64_(g),
            true,
        );
        for (r, &v) in acc.r[o].iter_mut().zip(sums) {
            *r += g * v.to_f64_();
        }
    }

    /// Adds γ_o·part (rows×d) and γ_o·sums to tile `tile`'s accumulators.
    fn accumulate(&self, tile: usize, gammas: &[(usize, f64)], part: &[T], sums: &[T]) {
        let mut acc = self.accs[tile].lock().expect("tile lock");
        let acc = &mut *acc;
        for &(o, g) in gammas {
            axpy(acc.out[o], T::from_f64_(g), part);
            for (r, &v) in acc.r[o].iter_mut().zip(sums) {
                *r += g * v.to_f64_();
            }
        }
    }
}

/// y += a·x on equal-length slices (vectorised for f32).
#[inline]
fn axpy<T: Real>(y: &mut [T], a: T, x: &[T]) {
    if let (Some(y32), Some(x32)) = (super::simd::as_f32_mut(y), super::simd::as_f32(x)) {
        let a32 = a.to_f64_() as f32;
        for (u, &v) in y32.iter_mut().zip(x32) {
            *u += a32 * v;
        }
        return;
    }
    for (u, &v) in y.iter_mut().zip(x) {
        *u = *u + a * v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circle_rounds_cover_every_pair_once_with_disjoint_tiles_per_round() {
        for b in [2usize, 3, 4, 7, 10] {
            let rounds = circle_rounds(b);
            let mut seen = std::collections::BTreeSet::new();
            for r in &rounds {
                let mut tiles = std::collections::BTreeSet::new();
                for &(i, j) in r {
                    assert!(i < j && j < b);
                    assert!(tiles.insert(i) && tiles.insert(j), "tile twice in a round");
                    assert!(seen.insert((i, j)), "pair twice");
                }
            }
            assert_eq!(seen.len(), b * (b - 1) / 2);
        }
        assert!(circle_rounds(1).is_empty());
    }

    #[test]
    fn permute_rows_moves_each_row_to_its_destination() {
        let dest = [2usize, 0, 1, 3, 5, 4];
        let mut buf: Vec<u32> = (0..12).collect(); // 6 rows of 2
        permute_rows(&mut buf, 2, &dest);
        let mut want = vec![0u32; 12];
        for (k, &to) in dest.iter().enumerate() {
            want[2 * to] = 2 * k as u32;
            want[2 * to + 1] = 2 * k as u32 + 1;
        }
        assert_eq!(buf, want);
    }

    #[test]
    fn split_even_gives_near_equal_parts_of_at_most_max() {
        let parts = split_even(600, 256);
        assert_eq!(parts, vec![0..200, 200..400, 400..600]);
        assert_eq!(split_even(256, 256), vec![0..256]);
        assert!(split_even(0, 256).is_empty());
    }

    #[test]
    fn one_hot_detection_accepts_zero_rows_and_rejects_soft_rows() {
        let y = ndarray::array![[0.0f32, 1.0], [0.0, 0.0], [1.0, 0.0]];
        assert_eq!(one_hot_classes(y.view()), Some(vec![1, usize::MAX, 0]));
        let soft = ndarray::array![[0.5f32, 0.5]];
        assert_eq!(one_hot_classes(soft.view()), None);
        let two = ndarray::array![[1.0f32, 1.0]];
        assert_eq!(one_hot_classes(two.view()), None);
    }
}
