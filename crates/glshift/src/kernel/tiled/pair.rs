//! The work of one tile pair: the Gaussian tile, its part of S and its gradient products,
//! added to the accumulators of both tiles.

use std::sync::Mutex;

use ndarray::{Array2, ArrayView2, ArrayViewMut2};

use super::super::gemm::gemm;
use super::super::simd::gauss_tile;
use super::plan::Plan;
use super::Request;
use crate::Real;

/// Per-thread scratch buffers (contents fully overwritten on every use).
pub(super) struct Scratch<T> {
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
        Scratch {
            k: Vec::new(),
            hm: Vec::new(),
            rs: Vec::new(),
            cs: Vec::new(),
            p: Vec::new(),
            q: Vec::new(),
            yg: Vec::new(),
            ky: Vec::new(),
        }
    }
}

fn sized<T: Real>(v: &mut Vec<T>, len: usize) -> &mut [T] {
    v.clear();
    v.resize(len, T::zero());
    &mut v[..]
}

/// The gradient accumulators of one tile, per objective: Σ γ·(K Z)-parts (rows×d, in tile
/// order) and Σ γ·(row sums of K) per row (f64).
pub(super) struct TileAcc<'g, T> {
    pub(super) out: Vec<&'g mut [T]>,
    pub(super) r: Vec<&'g mut [f64]>,
}

/// A tile pair's part of S: at most two entries (one-hot tiles) or a dense c×c matrix.
pub(super) enum SPart {
    Entries([Option<(usize, usize, f64)>; 2]),
    Dense(Array2<f64>),
}

pub(super) struct Ctx<'x, 'r, 'a, 'g, T> {
    pub(super) req: &'x Request<'r, 'a, T>,
    pub(super) plan: &'x Plan,
    pub(super) zc: &'x [Vec<T>],
    pub(super) norms: &'x [Vec<T>],
    pub(super) accs: &'x [Mutex<TileAcc<'g, T>>],
}

/// A tile pair (i ≤ j) in progress: its block, centred rows and Gaussian kernel (p × q).
struct TilePair<'v, T> {
    i: usize,
    j: usize,
    blk: usize,
    za: ArrayView2<'v, T>,
    zb: ArrayView2<'v, T>,
    kv: ArrayView2<'v, T>,
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
        self.req.domains[tile.dom].y.slice(ndarray::s![first..first + tile.len, ..])
    }

    /// Processes tile pair (i, j), i ≤ j: adds to the gradient accumulators of both tiles and
    /// returns this pair's part of S for its block.
    pub(super) fn pair(&self, sc: &mut Scratch<T>, i: usize, j: usize) -> SPart {
        let plan = self.plan;
        let (ti, tj) = (&plan.tiles[i], &plan.tiles[j]);
        let (p, q) = (ti.len, tj.len);
        let off = i != j;
        let blk = plan.block_index(i, j).expect("needed pair has a block");

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
        let tp = TilePair { i, j, blk, za, zb, kv };
        if plan.one_hot {
            return self.one_hot_pair(&tp, rsb, csb, pm, qm);
        }
        self.soft_pair(&tp, hm, rs, cs, yg, ky)
    }

    /// One-hot tiles: S part = the kernel total at (class_i, class_j) (and its transpose on a
    /// diagonal block); each objective adds γ·K·Z with γ its Γ entry for the two classes.
    fn one_hot_pair(
        &self,
        tp: &TilePair<'_, T>,
        rsb: &[T],
        csb: &[T],
        pm: &mut Vec<T>,
        qm: &mut Vec<T>,
    ) -> SPart {
        let plan = self.plan;
        let (i, j, blk, kv) = (tp.i, tp.j, tp.blk, tp.kv);
        let (ti, tj) = (&plan.tiles[i], &plan.tiles[j]);
        let (p, q, d) = (ti.len, tj.len, plan.d);
        let off = i != j;
        let total: f64 = rsb.iter().map(|v| v.to_f64_()).sum();
        let (m, l) = (ti.class.expect("one-hot tile"), tj.class.expect("one-hot tile"));
        let s_part = SPart::Entries([
            Some((m, l, total)),
            (ti.dom == tj.dom && off).then_some((l, m, total)),
        ]);
        let gammas: Vec<(usize, f64)> = plan
            .active_objectives(blk, i, j)
            .iter()
            .map(|&o| (o, plan.gamma(o, blk, i, j)))
            .collect();
        match gammas.len() {
            0 => {}
            1 => {
                // One objective: the products go straight into its accumulators.
                let (o, g) = gammas[0];
                self.add_product(i, o, g, kv, tp.zb, rsb);
                if off {
                    self.add_product(j, o, g, kv.t(), tp.za, csb);
                }
            }
            _ => {
                let pbuf = sized(pm, p * d);
                gemm(
                    ArrayViewMut2::from_shape((p, d), &mut pbuf[..]).expect("shape"),
                    kv,
                    tp.zb,
                    T::one(),
                    false,
                );
                self.accumulate(i, &gammas, pbuf, rsb);
                if off {
                    let qbuf = sized(qm, q * d);
                    gemm(
                        ArrayViewMut2::from_shape((q, d), &mut qbuf[..]).expect("shape"),
                        kv.t(),
                        tp.za,
                        T::one(),
                        false,
                    );
                    self.accumulate(j, &gammas, qbuf, csb);
                }
            }
        }
        s_part
    }

    /// Soft labels: S part = Y_Iᵀ (K Y_J); per objective H = (Y_I Γ_eff Y_Jᵀ) ∘ K.
    fn soft_pair(
        &self,
        tp: &TilePair<'_, T>,
        hm: &mut Vec<T>,
        rs: &mut Vec<T>,
        cs: &mut Vec<T>,
        yg: &mut Vec<T>,
        ky: &mut Vec<T>,
    ) -> SPart {
        let plan = self.plan;
        let (i, j, blk, kv) = (tp.i, tp.j, tp.blk, tp.kv);
        let (ti, tj) = (&plan.tiles[i], &plan.tiles[j]);
        let (p, q, c) = (ti.len, tj.len, plan.c);
        let off = i != j;
        let mut s_part = Array2::<f64>::zeros((c, c));
        let (ya, yb) = (self.labels(i), self.labels(j));
        let kyb = sized(ky, p * c);
        gemm(
            ArrayViewMut2::from_shape((p, c), &mut kyb[..]).expect("shape"),
            kv,
            yb,
            T::one(),
            false,
        );
        let mut part_t = Array2::<T>::zeros((c, c));
        gemm(
            part_t.view_mut(),
            ya.t(),
            ArrayView2::from_shape((p, c), &kyb[..]).expect("shape"),
            T::one(),
            false,
        );
        s_part.zip_mut_with(&part_t, |s, v| *s += v.to_f64_());
        if ti.dom == tj.dom && off {
            s_part.zip_mut_with(&part_t.t(), |s, v| *s += v.to_f64_());
        }
        for &o in &plan.active_objectives(blk, i, j) {
            let g = plan.gamma_eff[o][blk].as_ref().expect("active objective");
            let gt = g.mapv(T::from_f64_);
            let ygb = sized(yg, p * c);
            gemm(
                ArrayViewMut2::from_shape((p, c), &mut ygb[..]).expect("shape"),
                ya,
                gt.view(),
                T::one(),
                false,
            );
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
            for (r, (hrow, krow)) in hb.chunks_exact_mut(q).zip(kv.rows()).enumerate() {
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
            self.add_product(i, o, 1.0, hv, tp.zb, rsb);
            if off {
                self.add_product(j, o, 1.0, hv.t(), tp.za, csb);
            }
        }
        SPart::Dense(s_part)
    }

    /// acc_o(tile) += γ·m·z and r_o(tile) += γ·sums (one GEMM into the accumulator).
    fn add_product(
        &self,
        tile: usize,
        o: usize,
        g: f64,
        m: ArrayView2<T>,
        z: ArrayView2<T>,
        sums: &[T],
    ) {
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
    if let (Some(y32), Some(x32)) =
        (super::super::simd::as_f32_mut(y), super::super::simd::as_f32(x))
    {
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
