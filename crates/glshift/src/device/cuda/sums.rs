//! The exact kernel sums of `kernel::tiled` on a device: the same request, the same outputs.
//!
//! Rows and tiles as [`Layout`] says: one-hot rows sorted by class on the device, and only the
//! tile pairs (I of a, J of b) that an S block asked for in full or some objective's Γ_eff
//! between the two tiles' classes needs (J_TU's diagonal Γ: pairs of tiles sharing a class);
//! on a block with a = b only pairs I ≤ J, since K^{aa} is symmetric and so is H below (Γ_eff
//! is). For each pair:
//!
//!   D = Z_I Z_Jᵀ → K = exp(min(2D − ‖z_i‖² − ‖z_j‖², 0)/h)     (a product, `gauss`)
//!   P = Y_Iᵀ (K Y_J);  S^{ab} += P, and += Pᵀ too for I < J on a = b  (products; f64 sums)
//!   per objective of the pair, Γ_eff = Γ (+ Γᵀ when a = b):
//!   H = (Y_I Γ_eff Y_Jᵀ) ∘ K;  G_I += H Z_J, r_I += H·1;  and unless (a, I) = (b, J)
//!   G_J += Hᵀ Z_I, r_J += Hᵀ·1                                (products, `mul_inplace`)
//!
//! then ∂ℓ_o/∂Z_a = (2/h)(G − r ∘ Z_a) (`grad_finish`), put back in the caller's row order
//! (`gather_rows`). Rows are centred on the pooled mean first, as on the CPU, on the device
//! (`center_rows`), so the host only hands over its rows and labels and reads back S, the
//! values and the gradients. Memory: the inputs (twice while they are sorted) and
//! accumulators plus three tile×tile buffers.
//!
//! Written against [`Backend`]: the GPU runs it, and the tests run it on the CPU's emulation
//! (`host_backend`, the same kernels built by the C compiler) against the CPU's tiled pass.

use ndarray::Array2;

use super::backend::{Arg, Backend, Src, K};
use super::reduce::{col_reduce, Reduce};
use super::sums_layout::{gamma_eff, Layout, PairPlan};
use crate::kernel::tiled::request::{Output, Request};

/// Rows per tile on the GPU: 4096² f32 = 64 MiB per tile buffer.
pub(super) const TILE: usize = 4096;

/// One domain on the device, in the layout's row order: centred rows (n×d), labels (n×c),
/// squared row norms (n); where rows were reordered, the device row of each of the caller's
/// `n_caller` rows (−1 for none) to put the gradients back in the caller's order.
struct Dom<B> {
    z: B,
    y: B,
    norms: B,
    n: usize,
    n_caller: usize,
    back: Option<B>,
}

/// G (n×d) and r (n) of one objective and domain.
type Accumulator<B> = (B, B);

/// Per objective, per domain: its accumulator where the objective touches the domain.
type Accumulators<B> = Vec<Vec<Option<Accumulator<B>>>>;

/// The tile×tile and tile×c scratch buffers every tile pair reuses, and a column of ones.
struct Scratch<B> {
    k: B,
    m: B,
    ky: B,
    yg: B,
    ones: B,
}

impl<B> Scratch<B> {
    fn new<D: Backend<Buf = B>>(dev: &D, tile: usize, c: usize) -> Result<Scratch<B>, String> {
        Ok(Scratch { k: dev.zeros(tile * tile)?, m: dev.zeros(tile * tile)?, ky: dev.zeros(tile * c)?, yg: dev.zeros(tile * c)?, ones: dev.upload(&vec![1f32; tile])? })
    }
}

/// Gradient accumulators G (n×d) and r (n) per objective and per domain it touches.
fn alloc_accumulators<D: Backend>(dev: &D, req: &Request<f32>, doms: &[Dom<D::Buf>], d: usize) -> Result<Accumulators<D::Buf>, String> {
    let touched = |o: usize, a: usize| req.objectives[o].terms.iter().any(|(x, y, _)| *x == a || *y == a);
    (0..req.objectives.len())
        .map(|o| {
            (0..doms.len())
                .map(|a| if touched(o, a) { Ok(Some((dev.zeros(doms[a].n * d)?, dev.zeros(doms[a].n)?))) } else { Ok(None) })
                .collect()
        })
        .collect()
}

/// Γ_eff of every objective with a term on block (a, b), uploaded.
fn upload_gammas<D: Backend>(dev: &D, req: &Request<f32>, a: usize, b: usize) -> Result<Vec<(usize, D::Buf)>, String> {
    (0..req.objectives.len())
        .filter_map(|o| gamma_eff(req, o, a, b).map(|gm| (o, gm)))
        .map(|(o, gm)| dev.upload(&gm.iter().map(|&x| x as f32).collect::<Vec<f32>>()).map(|s| (o, s)))
        .collect()
}

/// What one block's tile pairs read: the two domains, Γ_eff per objective, c, d and 1/h.
struct BlockInputs<'r, B> {
    a: usize,
    b: usize,
    doms: &'r [Dom<B>],
    gammas: &'r [(usize, B)],
    c: usize,
    d: usize,
    inv_h: f32,
}

/// `kernel::tiled::run` on `dev`, by tiles of at most `tile` rows ([`Layout`]: one-hot rows
/// sorted by class, and only the tile pairs some objective or S block needs).
pub(crate) fn kernel_sums<D: Backend>(dev: &D, req: &Request<f32>, tile: usize) -> Result<Output<f32>, String> {
    let d = req.domains.first().map_or(0, |x| x.z.ncols());
    let c = req.domains.first().map_or(0, |x| x.y.ncols());
    let layout = Layout::new(req, tile)?;
    let doms = upload_domains(dev, req, &layout, d)?;
    let mut acc = alloc_accumulators(dev, req, &doms, d)?;
    let mut scratch = Scratch::new(dev, layout.tile, c.max(1))?;
    let mut slots = dev.zeros(layout.pairs.len().max(1) * c * c)?;
    let inv_h = (1.0 / req.h) as f32;
    let mut gammas = Vec::new();
    for (p, pair) in layout.pairs.iter().enumerate() {
        let (a, b) = layout.blocks[pair.block];
        if p == 0 || layout.pairs[p - 1].block != pair.block {
            gammas = upload_gammas(dev, req, a, b)?;
        }
        let inputs = BlockInputs { a, b, doms: &doms, gammas: &gammas, c, d, inv_h };
        tile_pair(dev, &inputs, pair, &mut scratch, (&mut slots, p * c * c), &mut acc)?;
    }
    let s = sum_blocks(&dev.download(&slots)?, &layout, c);
    let values = objective_values(req, &s);
    let grads = finish_gradients(dev, &doms, &mut acc, d, (2.0 / req.h) as f32)?;
    dev.sync()?;
    Ok(Output { s, values, grads })
}

/// One pair of row tiles (I of a, J of b; `mirrored` when it stands for (J, I) too): K, its S
/// part Y_Iᵀ (K Y_J) into `slot`, and for every objective of the pair the gradient sums of
/// H = (Y_I Γ Y_Jᵀ) ∘ K.
fn tile_pair<D: Backend>(
    dev: &D,
    blk: &BlockInputs<D::Buf>,
    pair: &PairPlan,
    sc: &mut Scratch<D::Buf>,
    slot: (&mut D::Buf, usize),
    acc: &mut Accumulators<D::Buf>,
) -> Result<(), String> {
    let BlockInputs { a, b, doms, c, d, .. } = *blk;
    let (ri, rj) = (&pair.ri, &pair.rj);
    let (p, q) = (ri.len(), rj.len());
    let (da, db) = (&doms[a], &doms[b]);
    let (za, zb) = (Src::At(&da.z, ri.start * d, d), Src::At(&db.z, rj.start * d, d));
    let (ya, yb) = (|| Src::At(&da.y, ri.start * c, c), || Src::At(&db.y, rj.start * c, c));
    // K = Gaussian of Z_I Z_Jᵀ.
    dev.gemm((false, true), (p, q, d), za, zb, 0.0, &mut sc.k)?;
    let [oa, ob, pi, qi] = [ri.start, rj.start, p, q].map(|v| Arg::I32(v as i32));
    dev.launch(K::Gauss, p * q, &mut [Arg::Out(&mut sc.k), Arg::In(&da.norms), Arg::In(&db.norms), oa, ob, pi, qi, Arg::F32(blk.inv_h)])?;
    // S part = Y_Iᵀ (K Y_J).
    dev.gemm((false, false), (p, c, q), Src::Buf(&sc.k, q), yb(), 0.0, &mut sc.ky)?;
    dev.gemm_at((true, false), (c, c, p), ya(), Src::Buf(&sc.ky, c), 0.0, slot)?;
    for (o, gm) in blk.gammas.iter().filter(|(o, _)| pair.objectives.contains(o)) {
        // H = (Y_I Γ Y_Jᵀ) ∘ K, built in m.
        dev.gemm((false, false), (p, c, c), ya(), Src::Buf(gm, c), 0.0, &mut sc.yg)?;
        dev.gemm((false, true), (p, q, c), Src::Buf(&sc.yg, c), yb(), 0.0, &mut sc.m)?;
        dev.launch(K::MulInplace, p * q, &mut [Arg::Out(&mut sc.m), Arg::In(&sc.k), Arg::I64((p * q) as i64)])?;
        let h = || Src::Buf(&sc.m, q);
        let (ga, ra) = acc[*o][a].as_mut().expect("touched");
        dev.gemm_at((false, false), (p, d, q), h(), Src::At(&db.z, rj.start * d, d), 1.0, (ga, ri.start * d))?;
        dev.gemm_at((false, false), (p, 1, q), h(), Src::Buf(&sc.ones, 1), 1.0, (ra, ri.start))?;
        if a != b || pair.mirrored {
            let (gb, rb) = acc[*o][b].as_mut().expect("touched");
            dev.gemm_at((true, false), (q, d, p), h(), Src::At(&da.z, ri.start * d, d), 1.0, (gb, rj.start * d))?;
            dev.gemm_at((true, false), (q, 1, p), h(), Src::Buf(&sc.ones, 1), 1.0, (rb, rj.start))?;
        }
    }
    Ok(())
}

/// S per block: the pairs' c×c parts (downloaded, `values`), each mirrored one with its
/// transpose, added in f64 in a fixed order.
fn sum_blocks(values: &[f32], layout: &Layout, c: usize) -> Vec<((usize, usize), Array2<f64>)> {
    let mut sums: Vec<Array2<f64>> = layout.blocks.iter().map(|_| Array2::zeros((c, c))).collect();
    for (p, pair) in layout.pairs.iter().enumerate() {
        let v = |i: usize, j: usize| values[p * c * c + i * c + j] as f64;
        let sum = &mut sums[pair.block];
        for ((i, j), s) in sum.indexed_iter_mut() {
            *s += v(i, j) + if pair.mirrored { v(j, i) } else { 0.0 };
        }
    }
    layout.blocks.iter().copied().zip(sums).collect()
}

/// Each objective's value Σ_terms ⟨Γ, S^{ab}⟩.
fn objective_values(req: &Request<f32>, s: &[((usize, usize), Array2<f64>)]) -> Vec<f64> {
    let s_of = |a: usize, b: usize| &s.iter().find(|(k, _)| *k == (a, b)).expect("block computed").1;
    req.objectives.iter().map(|o| o.terms.iter().map(|(a, b, gm)| (gm * s_of(*a, *b)).sum()).sum()).collect()
}

/// ∂ℓ_o/∂Z_a = scale·(G − r ∘ Z_a) per objective and domain, downloaded in the caller's row
/// order (zeros where untouched, and on rows the layout left out).
fn finish_gradients<D: Backend>(dev: &D, doms: &[Dom<D::Buf>], acc: &mut Accumulators<D::Buf>, d: usize, scale: f32) -> Result<Vec<Vec<Array2<f32>>>, String> {
    let mut grads = Vec::with_capacity(acc.len());
    for row in acc.iter_mut() {
        let mut per_dom = Vec::with_capacity(doms.len());
        for (dm, slot) in doms.iter().zip(row.iter_mut()) {
            per_dom.push(match slot {
                None => Array2::zeros((dm.n_caller, d)),
                Some((ga, ra)) => {
                    let [n, d_] = [dm.n, d].map(|v| Arg::I32(v as i32));
                    dev.launch(K::GradFinish, dm.n * d, &mut [Arg::Out(ga), Arg::In(&dm.z), Arg::In(ra), n, d_, Arg::F32(scale)])?;
                    let mut host = match &dm.back {
                        Some(back) => dev.download(&gather(dev, ga, back, (dm.n_caller, d, dm.n))?)?,
                        None => dev.download(ga)?,
                    };
                    host.truncate(dm.n_caller * d);
                    Array2::from_shape_vec((dm.n_caller, d), host).map_err(|e| e.to_string())?
                }
            });
        }
        grads.push(per_dom);
    }
    Ok(grads)
}

/// `gather_rows`: the `n` rows (d wide) `idx` names of `src`'s `n_src` rows, zeros for −1.
fn gather<D: Backend>(dev: &D, src: &D::Buf, idx: &D::Buf, (n, d, n_src): (usize, usize, usize)) -> Result<D::Buf, String> {
    let mut dst = dev.zeros(n * d)?;
    let [n_, d_, s_] = [n, d, n_src].map(|v| Arg::I32(v as i32));
    dev.launch(K::GatherRows, n * d, &mut [Arg::Out(&mut dst), Arg::In(src), Arg::In(idx), n_, d_, s_])?;
    Ok(dst)
}

/// Each domain's rows, centred on the pooled mean, their squared norms and the labels, on the
/// device, in the layout's order. The rows go up as they are (read in place when contiguous)
/// and are sorted there (`gather_rows`) where the layout orders them; the mean (column sums by
/// chunks of rows, added across domains in f64 on the host: d values) and the centring and
/// norms (`center_rows`) are the device's work. Any centre gives the same K and gradients up to
/// rounding; the pooled mean keeps the expansion ‖a‖² + ‖b‖² − 2⟨a, b⟩ well conditioned.
fn upload_domains<D: Backend>(dev: &D, req: &Request<f32>, layout: &Layout, d: usize) -> Result<Vec<Dom<D::Buf>>, String> {
    let total: usize = req.domains.iter().map(|x| x.z.nrows()).sum();
    let c = req.domains.first().map_or(0, |x| x.y.ncols());
    let mut doms = Vec::with_capacity(req.domains.len());
    let mut sums = vec![0f64; d];
    for (dm, dl) in req.domains.iter().zip(&layout.doms) {
        let n_caller = dm.z.nrows();
        // A view already in standard layout is read in place (`as_standard_layout` borrows it).
        let z = dev.upload(dm.z.as_standard_layout().as_slice().expect("standard layout"))?;
        if n_caller > 0 {
            let col = dev.download(&col_reduce(dev, Reduce::Sum, &z, None, n_caller, d, 1.0)?)?;
            sums.iter_mut().zip(&col).for_each(|(s, &v)| *s += v as f64);
        }
        let y = dev.upload(dm.y.as_standard_layout().as_slice().expect("standard layout"))?;
        let (z, y, back) = match &dl.order {
            None => (z, y, None),
            Some(order) => {
                let mut back = vec![-1f32; n_caller];
                order.iter().enumerate().for_each(|(at, &row)| back[row] = at as f32);
                let idx = dev.upload(&order.iter().map(|&row| row as f32).collect::<Vec<f32>>())?;
                let sorted = (gather(dev, &z, &idx, (dl.n, d, n_caller))?, gather(dev, &y, &idx, (dl.n, c, n_caller))?);
                (sorted.0, sorted.1, Some(dev.upload(&back)?))
            }
        };
        doms.push(Dom { z, y, norms: dev.zeros(dl.n)?, n: dl.n, n_caller, back });
    }
    let mean: Vec<f32> = sums.iter().map(|&s| if total > 0 { (s / total as f64) as f32 } else { 0.0 }).collect();
    let mean = dev.upload(&mean)?;
    for dm in &mut doms {
        let [n, d_] = [dm.n, d].map(|v| Arg::I32(v as i32));
        dev.launch(K::CenterRows, dm.n, &mut [Arg::Out(&mut dm.z), Arg::In(&mean), Arg::Out(&mut dm.norms), n, d_])?;
    }
    Ok(doms)
}
