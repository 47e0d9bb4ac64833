//! Random Fourier features: the linear-time approximation of the kernel sums
//! (`mcmd-math.md`, "Random features").
//!
//! K(z, z') = exp(−‖z − z'‖²/h) ≈ φ(z)ᵀφ(z') with φ(z) = √(2/r) cos(Ω z + b), the r rows of Ω
//! drawn from N(0, (2/h) I) and b from U[0, 2π). With E_a = Φ_aᵀ Y_a (r×c),
//! S^{ab} ≈ E_aᵀ E_b, and an objective ℓ = Σ ⟨Γ^{ab}, S^{ab}⟩ has
//! ∂ℓ/∂E_a = Σ E_b Γ^{ab}ᵀ (+ E_b Γ^{ba} for the other side),
//! ∂ℓ/∂Φ_a = Y_a (∂ℓ/∂E_a)ᵀ, ∂ℓ/∂Z_a = (−√(2/r) sin(Z_a Ωᵀ + b) ∘ ∂ℓ/∂Φ_a) Ω.
//! Cost O(n r (d + c)), memory O(n(d + c) + r(d + c)): rows are processed in chunks of
//! [`CHUNK`], twice (Φ for E, then again for the gradient, instead of storing n×r values).
//!
//! Ω = √(2/h) Ω₀ with Ω₀ and b drawn once from the seed, so the features change with h only by
//! scaling. Rows are centred on the pooled mean m(Z) before the projection, as on the exact
//! path (f32 cosines are more accurate for small arguments): the estimate is then exactly
//! translation invariant like K, and the gradient includes the term through m
//! (−mean_j ∂ℓ/∂z̃_j on every row). Chunk partials of E are summed in chunk order in f64: results do not depend on
//! the number of threads.

use super::gemm::gemm;
use super::simd::cos_sin;
use super::tiled::{Output, Request};
use crate::Real;
use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;

/// Rows per chunk.
const CHUNK: usize = 512;
/// Chunks computed in parallel before their partial sums are added (fixed, so the order of
/// the additions does not depend on the thread count).
const BATCH: usize = 16;

/// Seed of the features used by the MUL objectives when none is given.
pub const DEFAULT_SEED: u64 = 0x5EED_0FF0_0E1E;

/// Number of features r and the seed of Ω₀ and b.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomFeatures {
    pub r: usize,
    pub seed: u64,
}

struct Features<T> {
    /// Ω = √(2/h) Ω₀ (r×d).
    omega: Array2<T>,
    b: Vec<T>,
}

fn features<T: Real>(rf: RandomFeatures, d: usize, h: f64) -> Features<T> {
    let mut rng = ChaCha8Rng::seed_from_u64(rf.seed);
    let s = (2.0 / h).sqrt();
    let omega = Array2::from_shape_fn((rf.r, d), |_| {
        T::from_f64_(s * rng.sample::<f64, _>(StandardNormal))
    });
    let b = (0..rf.r).map(|_| T::from_f64_(rng.random_range(0.0..std::f64::consts::TAU))).collect();
    Features { omega, b }
}

/// Pooled mean of all rows of the domains in `used` (f64).
fn pooled_mean<T: Real>(req: &Request<T>, used: &[bool], d: usize) -> Vec<T> {
    let mut mean = Array1::<f64>::zeros(d);
    let mut n = 0usize;
    for (dm, _) in req.domains.iter().zip(used).filter(|(_, u)| **u) {
        for row in dm.z.rows() {
            mean.iter_mut().zip(row).for_each(|(m, v)| *m += v.to_f64_());
        }
        n += dm.z.nrows();
    }
    if n > 0 {
        mean /= n as f64;
    }
    mean.iter().map(|&v| T::from_f64_(v)).collect()
}

/// Per-thread buffers of one chunk (overwritten on every use; kept to avoid fresh, page-faulting
/// allocations of several MB per chunk).
struct Scratch<T> {
    zc: Vec<T>,
    u: Vec<T>,
    cos: Vec<T>,
    sin: Vec<T>,
    dphi: Vec<T>,
}

impl<T> Default for Scratch<T> {
    fn default() -> Self {
        Scratch {
            zc: Vec::new(),
            u: Vec::new(),
            cos: Vec::new(),
            sin: Vec::new(),
            dphi: Vec::new(),
        }
    }
}

fn sized<T: Real>(v: &mut Vec<T>, len: usize) -> &mut [T] {
    v.clear();
    v.resize(len, T::zero());
    &mut v[..]
}

/// One scratch per rayon thread, picked by thread index.
struct Pool<T>(Vec<std::sync::Mutex<Scratch<T>>>);

impl<T> Pool<T> {
    fn new() -> Self {
        Pool(
            (0..rayon::current_num_threads().max(1))
                .map(|_| std::sync::Mutex::new(Scratch::default()))
                .collect(),
        )
    }
    fn get(&self) -> std::sync::MutexGuard<'_, Scratch<T>> {
        let k = rayon::current_thread_index().unwrap_or(0) % self.0.len();
        self.0[k].lock().expect("scratch lock")
    }
}

/// U = (Z_chunk − mean) Ωᵀ + b for rows `r0..r1` of `z` (rows×r), in `sc.u`.
fn projections<T: Real>(
    z: ArrayView2<T>,
    r0: usize,
    r1: usize,
    mean: &[T],
    f: &Features<T>,
    sc: &mut Scratch<T>,
) {
    let (d, r) = (z.ncols(), f.b.len());
    let rows = r1 - r0;
    let zc = sized(&mut sc.zc, rows * d);
    for (k, out) in zc.chunks_exact_mut(d.max(1)).enumerate() {
        for ((o, &v), &m) in out.iter_mut().zip(z.row(r0 + k).iter()).zip(mean) {
            *o = v - m;
        }
    }
    let u = sized(&mut sc.u, rows * r);
    for row in u.chunks_exact_mut(r) {
        row.copy_from_slice(&f.b);
    }
    gemm(
        ArrayViewMut2::from_shape((rows, r), u).expect("shape"),
        ArrayView2::from_shape((rows, d), &sc.zc[..]).expect("shape"),
        f.omega.t(),
        T::one(),
        true,
    );
}

/// Runs a request with random features. Same outputs as [`super::tiled::run`], approximately.
pub(super) fn run<T: Real>(req: &Request<T>, rf: RandomFeatures) -> Output<T> {
    let doms = req.domains;
    let d = doms[0].z.ncols();
    let blocks = blocks_of(req);
    let used: Vec<bool> =
        (0..doms.len()).map(|a| blocks.iter().any(|&(x, y)| x == a || y == a)).collect();
    let pass = Pass {
        req,
        mean: pooled_mean(req, &used, d),
        f: features::<T>(rf, d, req.h),
        scale: (2.0 / rf.r as f64).sqrt(),
        pool: Pool::<T>::new(),
        r: rf.r,
    };
    // E_a = Φ_aᵀ Y_a, chunk partials summed in chunk order.
    let e: Vec<Option<Array2<f64>>> =
        (0..doms.len()).map(|a| used[a].then(|| pass.embedding(a))).collect();
    let e_of = |a: usize| e[a].as_ref().expect("domain in a block");
    let s: Vec<((usize, usize), Array2<f64>)> =
        blocks.iter().map(|&(a, b)| ((a, b), e_of(a).t().dot(e_of(b)))).collect();
    let values: Vec<f64> = req
        .objectives
        .iter()
        .map(|o| {
            o.terms
                .iter()
                .map(|(a, b, g)| {
                    (g * &s.iter().find(|(k, _)| *k == (*a, *b)).expect("block").1).sum()
                })
                .sum()
        })
        .collect();

    // ∂ℓ_o/∂E_a, then the gradient chunk by chunk.
    let mut grads: Vec<Vec<Array2<T>>> = req
        .objectives
        .iter()
        .map(|_| doms.iter().map(|dm| Array2::zeros(dm.z.raw_dim())).collect())
        .collect();
    let de: Vec<Vec<Option<Array2<T>>>> = req
        .objectives
        .iter()
        .map(|o| (0..doms.len()).map(|a| embedding_derivative(&o.terms, a, &e_of)).collect())
        .collect();
    for a in 0..doms.len() {
        pass.add_gradient(a, &de, &mut grads);
    }
    centre_gradients(&mut grads, doms.iter().map(|dm| dm.z.nrows()), &used, d);
    Output { s, values, grads }
}

/// The blocks the request asks for: its `s_blocks`, then every objective's term not among them.
fn blocks_of<T: Real>(req: &Request<T>) -> Vec<(usize, usize)> {
    let mut blocks: Vec<(usize, usize)> = req.s_blocks.clone();
    for o in &req.objectives {
        for (a, b, _) in &o.terms {
            if !blocks.contains(&(*a, *b)) {
                blocks.push((*a, *b));
            }
        }
    }
    blocks
}

/// `∂ℓ/∂E_a = Σ_{(a,b,G)} E_b Gᵀ + Σ_{(b,a,G)} E_b G` over an objective's `terms`, in term
/// order; `None` when no term involves domain `a`.
fn embedding_derivative<'e, T: Real>(
    terms: &[(usize, usize, Array2<f64>)],
    a: usize,
    e_of: &impl Fn(usize) -> &'e Array2<f64>,
) -> Option<Array2<T>> {
    let mut acc: Option<Array2<f64>> = None;
    for (ta, tb, g) in terms {
        let mut add = |x: Array2<f64>| {
            acc = Some(match acc.take() {
                Some(v) => v + x,
                None => x,
            })
        };
        if *ta == a {
            add(e_of(*tb).dot(&g.t()));
        }
        if *tb == a {
            add(e_of(*ta).dot(g));
        }
    }
    acc.map(|x| x.mapv(T::from_f64_))
}

/// ℓ(Z) = ℓ̃(Z − 1mᵀ) with m the pooled mean of the used rows: ∂ℓ/∂z_i = g̃_i − mean_j g̃_j
/// (`rows`: each domain's row count; `d`: dims).
fn centre_gradients<T: Real>(
    grads: &mut [Vec<Array2<T>>],
    rows: impl Iterator<Item = usize>,
    used: &[bool],
    d: usize,
) {
    let n_used: usize = rows.zip(used).filter(|(_, u)| **u).map(|(n, _)| n).sum();
    for g in grads.iter_mut() {
        let mut m = Array1::<f64>::zeros(d);
        for (ga, _) in g.iter().zip(used).filter(|(_, u)| **u) {
            for row in ga.rows() {
                m.iter_mut().zip(row).for_each(|(x, v)| *x += v.to_f64_());
            }
        }
        let m: Vec<T> = m.iter().map(|&v| T::from_f64_(v / n_used.max(1) as f64)).collect();
        for (ga, _) in g.iter_mut().zip(used).filter(|(_, u)| **u) {
            for mut row in ga.rows_mut() {
                row.iter_mut().zip(&m).for_each(|(x, &v)| *x = *x - v);
            }
        }
    }
}

/// What every chunk of a pass reads: the request, the pooled mean, the features and scratch.
struct Pass<'q, 'r, 'a, T> {
    req: &'q Request<'r, 'a, T>,
    mean: Vec<T>,
    f: Features<T>,
    /// √(2/r).
    scale: f64,
    pool: Pool<T>,
    r: usize,
}

impl<T: Real> Pass<'_, '_, '_, T> {
    /// `E_a = Φ_aᵀ Y_a` (r × c) of domain `a`, chunk partials summed in chunk order.
    fn embedding(&self, a: usize) -> Array2<f64> {
        let dm = &self.req.domains[a];
        let (n, c, r) = (dm.z.nrows(), dm.y.ncols(), self.r);
        let starts: Vec<usize> = (0..n).step_by(CHUNK).collect();
        let mut acc = Array2::<f64>::zeros((r, c));
        for batch in starts.chunks(BATCH) {
            let parts: Vec<Array2<T>> = batch
                .par_iter()
                .map(|&r0| {
                    let r1 = (r0 + CHUNK).min(n);
                    let mut guard = self.pool.get();
                    let sc = &mut *guard;
                    projections(dm.z, r0, r1, &self.mean, &self.f, sc);
                    let phi = sized(&mut sc.cos, sc.u.len());
                    cos_sin(&sc.u, self.scale, phi, &mut []);
                    let mut part = Array2::<T>::zeros((r, c));
                    gemm(
                        part.view_mut(),
                        ArrayView2::from_shape((r1 - r0, r), &sc.cos[..]).expect("shape").t(),
                        dm.y.slice(ndarray::s![r0..r1, ..]),
                        T::one(),
                        false,
                    );
                    part
                })
                .collect();
            for p in parts {
                acc.zip_mut_with(&p, |x, v| *x += v.to_f64_());
            }
        }
        acc
    }

    /// Adds `∂ℓ_o/∂Z_a` to `grads[o][a]` for every objective `o` with a derivative on domain
    /// `a` (`de[o][a]`), chunk by chunk.
    fn add_gradient(&self, a: usize, de: &[Vec<Option<Array2<T>>>], grads: &mut [Vec<Array2<T>>]) {
        let objs: Vec<usize> = (0..de.len()).filter(|&o| de[o][a].is_some()).collect();
        if objs.is_empty() {
            return;
        }
        let dm = &self.req.domains[a];
        let (n, d, r) = (dm.z.nrows(), dm.z.ncols(), self.r);
        // Per chunk, one output slice per active objective.
        let mut per_chunk: Vec<Vec<&mut [T]>> =
            (0..n.div_ceil(CHUNK)).map(|_| Vec::new()).collect();
        for (o, g) in grads.iter_mut().enumerate() {
            if !objs.contains(&o) {
                continue;
            }
            let slice = g[a].as_slice_mut().expect("contiguous");
            for (k, ch) in slice.chunks_mut(CHUNK * d).enumerate() {
                per_chunk[k].push(ch);
            }
        }
        per_chunk.into_par_iter().enumerate().for_each(|(k, mut outs)| {
            let (r0, r1) = (k * CHUNK, ((k + 1) * CHUNK).min(n));
            let rows = r1 - r0;
            let mut guard = self.pool.get();
            let sc = &mut *guard;
            projections(dm.z, r0, r1, &self.mean, &self.f, sc);
            let len = sc.u.len();
            sized(&mut sc.cos, len);
            sized(&mut sc.sin, len);
            cos_sin(&sc.u, -self.scale, &mut sc.cos, &mut sc.sin);
            let y = dm.y.slice(ndarray::s![r0..r1, ..]);
            for (slot, &o) in objs.iter().enumerate() {
                let deo = de[o][a].as_ref().expect("active");
                let dphi = sized(&mut sc.dphi, len);
                gemm(
                    ArrayViewMut2::from_shape((rows, r), &mut dphi[..]).expect("shape"),
                    y,
                    deo.t(),
                    T::one(),
                    false,
                );
                for (g, &s) in dphi.iter_mut().zip(&sc.sin) {
                    *g = *g * s;
                }
                let out = ArrayViewMut2::from_shape((rows, d), &mut outs[slot][..]).expect("shape");
                gemm(
                    out,
                    ArrayView2::from_shape((rows, r), &sc.dphi[..]).expect("shape"),
                    self.f.omega.view(),
                    T::one(),
                    false,
                );
            }
        });
    }
}

/// Floating-point operations of [`run`] for `n` rows in total (over the domains used), d, c,
/// r features and `n_obj` objectives with a gradient on every domain: per row, the projections
/// twice (2rd + r each), cos for Φ and cos/sin in the backward pass (counted 1 each), Φᵀ Y
/// (2rc), and per objective Y (∂E)ᵀ (2rc), the product with sin (r) and with Ω (2rd).
pub fn flops(n: usize, d: usize, c: usize, r: usize, n_obj: usize) -> f64 {
    let (n, d, c, r, o) = (n as f64, d as f64, c as f64, r as f64, n_obj as f64);
    n * (2.0 * (2.0 * r * d + r) + 3.0 * r + 2.0 * r * c + o * (2.0 * r * c + r + 2.0 * r * d))
}
