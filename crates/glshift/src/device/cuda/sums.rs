//! The exact kernel sums of `kernel::tiled` on a device: the same request, the same outputs.
//!
//! For every block (a, b) and every pair of row tiles (I of a, J of b); on a block with a = b
//! only the pairs I ≤ J, since K^{aa} is symmetric and so is H below (Γ_eff is):
//!
//!   D = Z_I Z_Jᵀ → K = exp(min(2D − ‖z_i‖² − ‖z_j‖², 0)/h)     (a product, `gauss`)
//!   P = Y_Iᵀ (K Y_J);  S^{ab} += P, and += Pᵀ too for I < J on a = b  (products; f64 sums)
//!   per objective with a term Γ on (a, b), Γ_eff = Γ (+ Γᵀ when a = b):
//!   H = (Y_I Γ_eff Y_Jᵀ) ∘ K;  G_I += H Z_J, r_I += H·1;  and unless (a, I) = (b, J)
//!   G_J += Hᵀ Z_I, r_J += Hᵀ·1                                (products, `mul_inplace`)
//!
//! then ∂ℓ_o/∂Z_a = (2/h)(G − r ∘ Z_a) (`grad_finish`). Rows are centred on the pooled mean
//! first, as on the CPU, on the device (`center_rows`), so the host only hands over its rows
//! and labels and reads back S, the values and the gradients. Memory: the inputs and
//! accumulators plus three tile×tile buffers.
//! Work: a block of T tiles on a = b costs T(T+1)/2 tile pairs instead of T².
//!
//! Written against [`Backend`]: the GPU runs it, and the tests run it on the CPU's emulation
//! (`host_backend`, the same kernels built by the C compiler) against the CPU's tiled pass.

use ndarray::Array2;

use super::backend::{Arg, Backend, Src, K};
use super::reduce::{col_reduce, Reduce};
use crate::kernel::tiled::request::{Output, Request};

/// Rows per tile on the GPU: 4096² f32 = 64 MiB per tile buffer.
pub(super) const TILE: usize = 4096;

fn ranges(n: usize, tile: usize) -> Vec<std::ops::Range<usize>> {
    (0..n).step_by(tile).map(|s| s..(s + tile).min(n)).collect()
}

/// The c×c Γ_eff of objective `o` on block (a, b), or None where it has no term there.
fn gamma_eff(req: &Request<f32>, o: usize, a: usize, b: usize) -> Option<Array2<f64>> {
    let mut acc: Option<Array2<f64>> = None;
    for (ta, tb, g) in &req.objectives[o].terms {
        if (*ta, *tb) == (a, b) {
            let add = if a == b { g + &g.t() } else { g.clone() };
            acc = Some(match acc {
                Some(x) => x + add,
                None => add,
            });
        }
    }
    acc
}

/// One domain on the device: centred rows (n×d), labels (n×c), squared row norms (n).
struct Dom<B> {
    z: B,
    y: B,
    norms: B,
    n: usize,
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

/// The blocks (a, b) the request needs: its S blocks and every objective's terms, sorted.
fn blocks_of(req: &Request<f32>) -> Vec<(usize, usize)> {
    let mut blocks: Vec<(usize, usize)> = req.s_blocks.clone();
    for o in &req.objectives {
        blocks.extend(o.terms.iter().map(|(a, b, _)| (*a, *b)));
    }
    blocks.sort_unstable();
    blocks.dedup();
    blocks
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

/// One tile pair's c×c part of S: its block, and whether its transpose belongs to S too (a
/// pair I < J of a block with a = b stands for the pair (J, I) as well).
struct Part {
    block: usize,
    mirrored: bool,
}

/// `kernel::tiled::run` on `dev`, by tiles of `tile` rows.
pub(crate) fn kernel_sums<D: Backend>(dev: &D, req: &Request<f32>, tile: usize) -> Result<Output<f32>, String> {
    let d = req.domains.first().map_or(0, |x| x.z.ncols());
    let c = req.domains.first().map_or(0, |x| x.y.ncols());
    let doms = upload_domains(dev, req, d)?;
    let blocks = blocks_of(req);
    let mut acc = alloc_accumulators(dev, req, &doms, d)?;
    let tile = doms.iter().map(|x| x.n.min(tile)).max().unwrap_or(0).max(1);
    let mut scratch = Scratch::new(dev, tile, c.max(1))?;
    let pairs = |a: usize, b: usize| {
        let (ti, tj) = (ranges(doms[a].n, tile), ranges(doms[b].n, tile));
        let mut out = Vec::new();
        for (i, ri) in ti.iter().enumerate() {
            for (j, rj) in tj.iter().enumerate() {
                if a != b || i <= j {
                    out.push((ri.clone(), rj.clone(), a == b && i < j));
                }
            }
        }
        out
    };
    let n_pairs: usize = blocks.iter().map(|&(a, b)| pairs(a, b).len()).sum();
    let mut slots = dev.zeros(n_pairs.max(1) * c * c)?;
    let mut parts = Vec::with_capacity(n_pairs);
    let inv_h = (1.0 / req.h) as f32;
    for (block, &(a, b)) in blocks.iter().enumerate() {
        let gammas = upload_gammas(dev, req, a, b)?;
        let inputs = BlockInputs { a, b, doms: &doms, gammas: &gammas, c, d, inv_h };
        for (ri, rj, mirrored) in pairs(a, b) {
            let slot = (&mut slots, parts.len() * c * c);
            tile_pair(dev, &inputs, (ri, rj, mirrored), &mut scratch, slot, &mut acc)?;
            parts.push(Part { block, mirrored });
        }
    }
    let s = sum_blocks(&dev.download(&slots)?, &blocks, &parts, c);
    let values = objective_values(req, &s);
    let grads = finish_gradients(dev, &doms, &mut acc, d, (2.0 / req.h) as f32)?;
    dev.sync()?;
    Ok(Output { s, values, grads })
}

/// One pair of row tiles (I of a, J of b; `both` when it stands for (J, I) too): K, its S part
/// Y_Iᵀ (K Y_J) into `slot`, and for every objective with a term on (a, b) the gradient sums
/// of H = (Y_I Γ Y_Jᵀ) ∘ K.
fn tile_pair<D: Backend>(
    dev: &D,
    blk: &BlockInputs<D::Buf>,
    (ri, rj, both): (std::ops::Range<usize>, std::ops::Range<usize>, bool),
    sc: &mut Scratch<D::Buf>,
    slot: (&mut D::Buf, usize),
    acc: &mut Accumulators<D::Buf>,
) -> Result<(), String> {
    let BlockInputs { a, b, doms, c, d, .. } = *blk;
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
    for (o, gm) in blk.gammas {
        // H = (Y_I Γ Y_Jᵀ) ∘ K, built in m.
        dev.gemm((false, false), (p, c, c), ya(), Src::Buf(gm, c), 0.0, &mut sc.yg)?;
        dev.gemm((false, true), (p, q, c), Src::Buf(&sc.yg, c), yb(), 0.0, &mut sc.m)?;
        dev.launch(K::MulInplace, p * q, &mut [Arg::Out(&mut sc.m), Arg::In(&sc.k), Arg::I64((p * q) as i64)])?;
        let h = || Src::Buf(&sc.m, q);
        let (ga, ra) = acc[*o][a].as_mut().expect("touched");
        dev.gemm_at((false, false), (p, d, q), h(), Src::At(&db.z, rj.start * d, d), 1.0, (ga, ri.start * d))?;
        dev.gemm_at((false, false), (p, 1, q), h(), Src::Buf(&sc.ones, 1), 1.0, (ra, ri.start))?;
        if a != b || both {
            let (gb, rb) = acc[*o][b].as_mut().expect("touched");
            dev.gemm_at((true, false), (q, d, p), h(), Src::At(&da.z, ri.start * d, d), 1.0, (gb, rj.start * d))?;
            dev.gemm_at((true, false), (q, 1, p), h(), Src::Buf(&sc.ones, 1), 1.0, (rb, rj.start))?;
        }
    }
    Ok(())
}

/// S per block: the pairs' c×c parts (downloaded, `values`), each mirrored one with its
/// transpose, added in f64 in a fixed order.
fn sum_blocks(values: &[f32], blocks: &[(usize, usize)], parts: &[Part], c: usize) -> Vec<((usize, usize), Array2<f64>)> {
    let mut sums: Vec<Array2<f64>> = blocks.iter().map(|_| Array2::zeros((c, c))).collect();
    for (p, part) in parts.iter().enumerate() {
        let v = |i: usize, j: usize| values[p * c * c + i * c + j] as f64;
        let sum = &mut sums[part.block];
        for ((i, j), s) in sum.indexed_iter_mut() {
            *s += v(i, j) + if part.mirrored { v(j, i) } else { 0.0 };
        }
    }
    blocks.iter().copied().zip(sums).collect()
}

/// Each objective's value Σ_terms ⟨Γ, S^{ab}⟩.
fn objective_values(req: &Request<f32>, s: &[((usize, usize), Array2<f64>)]) -> Vec<f64> {
    let s_of = |a: usize, b: usize| &s.iter().find(|(k, _)| *k == (a, b)).expect("block computed").1;
    req.objectives.iter().map(|o| o.terms.iter().map(|(a, b, gm)| (gm * s_of(*a, *b)).sum()).sum()).collect()
}

/// ∂ℓ_o/∂Z_a = scale·(G − r ∘ Z_a) per objective and domain, downloaded (zeros where untouched).
fn finish_gradients<D: Backend>(dev: &D, doms: &[Dom<D::Buf>], acc: &mut Accumulators<D::Buf>, d: usize, scale: f32) -> Result<Vec<Vec<Array2<f32>>>, String> {
    let mut grads = Vec::with_capacity(acc.len());
    for row in acc.iter_mut() {
        let mut per_dom = Vec::with_capacity(doms.len());
        for (dm, slot) in doms.iter().zip(row.iter_mut()) {
            per_dom.push(match slot {
                None => Array2::zeros((dm.n, d)),
                Some((ga, ra)) => {
                    let [n, d_] = [dm.n, d].map(|v| Arg::I32(v as i32));
                    dev.launch(K::GradFinish, dm.n * d, &mut [Arg::Out(ga), Arg::In(&dm.z), Arg::In(ra), n, d_, Arg::F32(scale)])?;
                    let mut host = dev.download(ga)?;
                    host.truncate(dm.n * d);
                    Array2::from_shape_vec((dm.n, d), host).map_err(|e| e.to_string())?
                }
            });
        }
        grads.push(per_dom);
    }
    Ok(grads)
}

/// Each domain's rows, centred on the pooled mean, their squared norms and the labels, on the
/// device. The rows go up as they are (read in place when contiguous); the mean (column sums by
/// chunks of rows, added across domains in f64 on the host: d values) and the centring and
/// norms (`center_rows`) are the device's work. Any centre gives the same K and gradients up to
/// rounding; the pooled mean keeps the expansion ‖a‖² + ‖b‖² − 2⟨a, b⟩ well conditioned.
fn upload_domains<D: Backend>(dev: &D, req: &Request<f32>, d: usize) -> Result<Vec<Dom<D::Buf>>, String> {
    let total: usize = req.domains.iter().map(|x| x.z.nrows()).sum();
    let mut doms = Vec::with_capacity(req.domains.len());
    let mut sums = vec![0f64; d];
    for dm in req.domains {
        let n = dm.z.nrows();
        // A view already in standard layout is read in place (`as_standard_layout` borrows it).
        let z = dev.upload(dm.z.as_standard_layout().as_slice().expect("standard layout"))?;
        if n > 0 {
            let col = dev.download(&col_reduce(dev, Reduce::Sum, &z, None, n, d, 1.0)?)?;
            sums.iter_mut().zip(&col).for_each(|(s, &v)| *s += v as f64);
        }
        let y = dev.upload(dm.y.as_standard_layout().as_slice().expect("standard layout"))?;
        doms.push(Dom { z, y, norms: dev.zeros(n)?, n });
    }
    let mean: Vec<f32> = sums.iter().map(|&s| if total > 0 { (s / total as f64) as f32 } else { 0.0 }).collect();
    let mean = dev.upload(&mean)?;
    for dm in &mut doms {
        let [n, d_] = [dm.n, d].map(|v| Arg::I32(v as i32));
        dev.launch(K::CenterRows, dm.n, &mut [Arg::Out(&mut dm.z), Arg::In(&mean), Arg::Out(&mut dm.norms), n, d_])?;
    }
    Ok(doms)
}
