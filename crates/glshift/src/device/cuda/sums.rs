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
//! then ∂ℓ_o/∂Z_a = (2/h)(G − r ∘ Z_a) (`grad_finish`). Rows are centred on the pooled mean
//! first, as on the CPU, on the device (`center_rows`). A domain's rows come from the host
//! ([`kernel_sums`]: the gradients are put back in the caller's row order and downloaded) or
//! are rows of a matrix already on the device, the kept pass's Z ([`kernel_sums_kept`]: the
//! gradients stay there, with the matrix row of each, for `resident`); `sums_rows` moves the
//! rows. Asked for TF32 (`tf32_kernel_sums`), the pass's products run in that mode and f32 is
//! restored after it. Memory: the inputs (twice while they are sorted) and accumulators plus
//! three tile×tile buffers.
//!
//! Written against [`Backend`]: the GPU runs it, and the tests run it on the CPU's emulation
//! (`host_backend`, the same kernels built by the C compiler) against the CPU's tiled pass.

use ndarray::Array2;

use super::backend::{Arg, Backend, Src, K};
use super::sums_layout::{Layout, PairPlan};
use super::sums_request::{RowsFrom, Sums};
use super::sums_rows::{download_gradients, upload_domains, Accumulators, Dom};
use crate::kernel::tiled::request::{Objective, Output, Request};

/// Rows per tile on the GPU: 4096² f32 = 64 MiB per tile buffer.
pub(super) const TILE: usize = 4096;

/// What [`kernel_sums_kept`] returns: the values on the host, the gradients on the device.
pub(crate) struct KeptOutput<B> {
    pub(crate) values: Vec<f64>,
    /// grads[o][a]: ∂ℓ_o/∂Z_a (n′_a × d, in the layout's row order) where objective o touches
    /// domain a.
    pub(crate) grads: Vec<Vec<Option<B>>>,
    /// Per domain: the device matrix's row of each of its n′_a rows there (float indices, as
    /// `scatter_add_rows` reads them), and n′_a.
    pub(crate) dest: Vec<(B, usize)>,
}

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
        Ok(Scratch {
            k: dev.zeros(tile * tile)?,
            m: dev.zeros(tile * tile)?,
            ky: dev.zeros(tile * c)?,
            yg: dev.zeros(tile * c)?,
            ones: dev.upload(&vec![1f32; tile])?,
        })
    }
}

/// Gradient accumulators G (n×d) and r (n) per objective and per domain it touches.
fn alloc_accumulators<D: Backend>(
    dev: &D,
    objectives: &[Objective],
    doms: &[Dom<D::Buf>],
    d: usize,
) -> Result<Accumulators<D::Buf>, String> {
    let touched =
        |o: usize, a: usize| objectives[o].terms.iter().any(|(x, y, _)| *x == a || *y == a);
    (0..objectives.len())
        .map(|o| {
            (0..doms.len())
                .map(|a| {
                    if touched(o, a) {
                        Ok(Some((dev.zeros(doms[a].n * d)?, dev.zeros(doms[a].n)?)))
                    } else {
                        Ok(None)
                    }
                })
                .collect()
        })
        .collect()
}

/// Γ_eff of every objective with a term on a block (the layout's), uploaded.
fn upload_gammas<D: Backend>(
    dev: &D,
    gammas: &[(usize, Array2<f64>)],
) -> Result<Vec<(usize, D::Buf)>, String> {
    gammas
        .iter()
        .map(|(o, gm)| {
            dev.upload(&gm.iter().map(|&x| x as f32).collect::<Vec<f32>>()).map(|s| (*o, s))
        })
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
/// sorted by class, and only the tile pairs some objective or S block needs); its products in
/// TF32 where `tf32`.
pub(crate) fn kernel_sums<D: Backend>(
    dev: &D,
    req: &Request<f32>,
    tile: usize,
    tf32: bool,
) -> Result<Output<f32>, String> {
    let d = req.domains.first().map_or(0, |x| x.z.ncols());
    let sums = Sums {
        rows: req.domains.iter().map(|dm| RowsFrom::Host(dm.z)).collect(),
        labels: req.domains.iter().map(|dm| dm.y).collect(),
        s_blocks: &req.s_blocks,
        objectives: &req.objectives,
        h: req.h,
        d,
        tf32,
    };
    let Pass { s, values, doms, acc } = pass(dev, &sums, tile)?;
    let grads = download_gradients(dev, &doms, acc, d)?;
    dev.sync()?;
    Ok(Output { s, values, grads })
}

/// The same sums with every domain's rows on the device ([`RowsFrom::Device`]), the
/// gradients left there.
pub(crate) fn kernel_sums_kept<D: Backend>(
    dev: &D,
    sums: &Sums<D::Buf>,
    tile: usize,
) -> Result<KeptOutput<D::Buf>, String> {
    let Pass { values, doms, acc, .. } = pass(dev, sums, tile)?;
    let grads =
        acc.into_iter().map(|row| row.into_iter().map(|a| a.map(|(g, _)| g)).collect()).collect();
    let dest = doms
        .into_iter()
        .map(|dm| dm.dest.map(|b| (b, dm.n)).ok_or("kept kernel sums over rows of the host"))
        .collect::<Result<_, _>>()?;
    Ok(KeptOutput { values, grads, dest })
}

/// What one pass leaves: S per block and the values on the host, the domains and the
/// finished gradients (layout order) on the device.
struct Pass<B> {
    s: Vec<((usize, usize), Array2<f64>)>,
    values: Vec<f64>,
    doms: Vec<Dom<B>>,
    acc: Accumulators<B>,
}

/// One pass: the domains on the device in the layout's order, every tile pair the layout
/// lists, then S and the values on the host and the gradients finished on the device.
fn pass<D: Backend>(dev: &D, sums: &Sums<D::Buf>, tile: usize) -> Result<Pass<D::Buf>, String> {
    if !sums.tf32 {
        return products(dev, sums, tile);
    }
    dev.set_tf32(true)?;
    let out = products(dev, sums, tile);
    // Back to f32 products whatever happened, for the network's products that follow.
    let restored = dev.set_tf32(false);
    let out = out?;
    restored.map(|_| out)
}

/// [`pass`] in the device's current mode of products.
fn products<D: Backend>(dev: &D, sums: &Sums<D::Buf>, tile: usize) -> Result<Pass<D::Buf>, String> {
    let d = sums.d;
    let c = sums.labels.first().map_or(0, |y| y.ncols());
    let layout = Layout::new(&sums.labels, sums.s_blocks, sums.objectives, tile)?;
    let doms = upload_domains(dev, sums, &layout)?;
    let mut acc = alloc_accumulators(dev, sums.objectives, &doms, d)?;
    let mut scratch = Scratch::new(dev, layout.tile, c.max(1))?;
    let mut slots = dev.zeros(layout.pairs.len().max(1) * c * c)?;
    let inv_h = (1.0 / sums.h) as f32;
    let mut gammas = Vec::new();
    for (p, pair) in layout.pairs.iter().enumerate() {
        let (a, b) = layout.blocks[pair.block];
        if p == 0 || layout.pairs[p - 1].block != pair.block {
            gammas = upload_gammas(dev, &layout.gammas[pair.block])?;
        }
        let inputs = BlockInputs { a, b, doms: &doms, gammas: &gammas, c, d, inv_h };
        tile_pair(dev, &inputs, pair, &mut scratch, (&mut slots, p * c * c), &mut acc)?;
    }
    let s = sum_blocks(&dev.download(&slots)?, &layout, c);
    let values = objective_values(sums.objectives, &s);
    finish_gradients(dev, &doms, &mut acc, d, (2.0 / sums.h) as f32)?;
    Ok(Pass { s, values, doms, acc })
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
    dev.launch(
        K::Gauss,
        p * q,
        &mut [
            Arg::Out(&mut sc.k),
            Arg::In(&da.norms),
            Arg::In(&db.norms),
            oa,
            ob,
            pi,
            qi,
            Arg::F32(blk.inv_h),
        ],
    )?;
    // S part = Y_Iᵀ (K Y_J).
    dev.gemm((false, false), (p, c, q), Src::Buf(&sc.k, q), yb(), 0.0, &mut sc.ky)?;
    dev.gemm_at((true, false), (c, c, p), ya(), Src::Buf(&sc.ky, c), 0.0, slot)?;
    for (o, gm) in blk.gammas.iter().filter(|(o, _)| pair.objectives.contains(o)) {
        // H = (Y_I Γ Y_Jᵀ) ∘ K, built in m.
        dev.gemm((false, false), (p, c, c), ya(), Src::Buf(gm, c), 0.0, &mut sc.yg)?;
        dev.gemm((false, true), (p, q, c), Src::Buf(&sc.yg, c), yb(), 0.0, &mut sc.m)?;
        dev.launch(
            K::MulInplace,
            p * q,
            &mut [Arg::Out(&mut sc.m), Arg::In(&sc.k), Arg::I64((p * q) as i64)],
        )?;
        let h = || Src::Buf(&sc.m, q);
        let (ga, ra) = acc[*o][a].as_mut().expect("touched");
        dev.gemm_at(
            (false, false),
            (p, d, q),
            h(),
            Src::At(&db.z, rj.start * d, d),
            1.0,
            (ga, ri.start * d),
        )?;
        dev.gemm_at((false, false), (p, 1, q), h(), Src::Buf(&sc.ones, 1), 1.0, (ra, ri.start))?;
        if a != b || pair.mirrored {
            let (gb, rb) = acc[*o][b].as_mut().expect("touched");
            dev.gemm_at(
                (true, false),
                (q, d, p),
                h(),
                Src::At(&da.z, ri.start * d, d),
                1.0,
                (gb, rj.start * d),
            )?;
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
fn objective_values(objectives: &[Objective], s: &[((usize, usize), Array2<f64>)]) -> Vec<f64> {
    let s_of =
        |a: usize, b: usize| &s.iter().find(|(k, _)| *k == (a, b)).expect("block computed").1;
    objectives
        .iter()
        .map(|o| o.terms.iter().map(|(a, b, gm)| (gm * s_of(*a, *b)).sum()).sum())
        .collect()
}

/// ∂ℓ_o/∂Z_a = scale·(G − r ∘ Z_a) in place of G, per objective and domain it touches (in the
/// layout's row order).
fn finish_gradients<D: Backend>(
    dev: &D,
    doms: &[Dom<D::Buf>],
    acc: &mut Accumulators<D::Buf>,
    d: usize,
    scale: f32,
) -> Result<(), String> {
    for row in acc.iter_mut() {
        for (dm, (ga, ra)) in
            doms.iter().zip(row.iter_mut()).filter_map(|(dm, slot)| slot.as_mut().map(|s| (dm, s)))
        {
            let [n, d_] = [dm.n, d].map(|v| Arg::I32(v as i32));
            dev.launch(
                K::GradFinish,
                dm.n * d,
                &mut [Arg::Out(ga), Arg::In(&dm.z), Arg::In(ra), n, d_, Arg::F32(scale)],
            )?;
        }
    }
    Ok(())
}
