//! The exact kernel sums of `kernel::tiled` on the GPU: the same request, the same outputs.
//!
//! For every block (a, b) and every pair of row tiles (I of a, J of b), all pairs even when
//! a = b (no class grouping, no symmetry: simpler, and the GPU has the FLOPs):
//!
//!   D = Z_I Z_Jᵀ → K = exp(min(2D − ‖z_i‖² − ‖z_j‖², 0)/h)     (cuBLAS, `gauss`)
//!   S^{ab} += Y_Iᵀ (K Y_J)                                      (cuBLAS; per pair, summed in f64)
//!   per objective with a term Γ on (a, b), Γ_eff = Γ (+ Γᵀ when a = b):
//!   H = (Y_I Γ_eff Y_Jᵀ) ∘ K;  G_I += H Z_J, r_I += H·1;  and when a ≠ b
//!   G_J += Hᵀ Z_I, r_J += Hᵀ·1                                  (cuBLAS, `hadamard`)
//!
//! then ∂ℓ_o/∂Z_a = (2/h)(G − r ∘ Z_a) (`finish`). Rows are centred on the pooled mean first,
//! as on the CPU. Memory: the inputs and accumulators plus three TILE×TILE buffers.

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};
use ndarray::{Array1, Array2};

use super::kernels::launch_config;
use super::{err, Gpu, Inner};
use crate::kernel::tiled::request::{Output, Request};

/// Rows per tile: 4096² f32 = 64 MiB per tile buffer.
const TILE: usize = 4096;

fn ranges(n: usize) -> Vec<std::ops::Range<usize>> {
    (0..n).step_by(TILE).map(|s| s..(s + TILE).min(n)).collect()
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

/// G (n×d) and r (n) of one objective and domain.
type Accumulator = (CudaSlice<f32>, CudaSlice<f32>);

struct Dom {
    z: CudaSlice<f32>,
    y: CudaSlice<f32>,
    norms: CudaSlice<f32>,
    n: usize,
}

/// The TILE×TILE and TILE×c scratch buffers every tile pair reuses, and a column of ones.
struct Scratch {
    k: CudaSlice<f32>,
    m: CudaSlice<f32>,
    ky: CudaSlice<f32>,
    yg: CudaSlice<f32>,
    ones: CudaSlice<f32>,
}

impl Scratch {
    fn new(st: &std::sync::Arc<CudaStream>, tile: usize, c: usize) -> Result<Scratch, String> {
        Ok(Scratch {
            k: st.alloc_zeros::<f32>(tile * tile).map_err(err("allocating a tile"))?,
            m: st.alloc_zeros::<f32>(tile * tile).map_err(err("allocating a tile"))?,
            ky: st.alloc_zeros::<f32>(tile * c.max(1)).map_err(err("allocating a tile"))?,
            yg: st.alloc_zeros::<f32>(tile * c.max(1)).map_err(err("allocating a tile"))?,
            ones: st.clone_htod(&vec![1f32; tile]).map_err(err("uploading ones"))?,
        })
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
fn alloc_accumulators(
    st: &std::sync::Arc<CudaStream>,
    req: &Request<f32>,
    doms: &[Dom],
    d: usize,
) -> Result<Vec<Vec<Option<Accumulator>>>, String> {
    let mut acc = Vec::with_capacity(req.objectives.len());
    for obj in &req.objectives {
        let mut row = Vec::with_capacity(doms.len());
        for (a, dm) in doms.iter().enumerate() {
            let touched = obj.terms.iter().any(|(x, y, _)| *x == a || *y == a);
            row.push(if touched {
                Some((
                    st.alloc_zeros::<f32>(dm.n * d).map_err(err("allocating gradients"))?,
                    st.alloc_zeros::<f32>(dm.n).map_err(err("allocating gradients"))?,
                ))
            } else {
                None
            });
        }
        acc.push(row);
    }
    Ok(acc)
}

/// Γ_eff of every objective with a term on block (a, b), uploaded.
fn upload_gammas(st: &std::sync::Arc<CudaStream>, req: &Request<f32>, a: usize, b: usize) -> Result<Vec<(usize, CudaSlice<f32>)>, String> {
    (0..req.objectives.len())
        .filter_map(|o| gamma_eff(req, o, a, b).map(|gm| (o, gm)))
        .map(|(o, gm)| {
            let v: Vec<f32> = gm.iter().map(|&x| x as f32).collect();
            st.clone_htod(&v).map(|s| (o, s)).map_err(err("uploading Γ"))
        })
        .collect()
}

/// What one block's tile pairs read: the two domains, Γ_eff per objective, c, d and 1/h.
struct BlockInputs<'r> {
    a: usize,
    b: usize,
    doms: &'r [Dom],
    gammas: &'r [(usize, CudaSlice<f32>)],
    c: usize,
    d: usize,
    inv_h: f32,
}

impl Gpu {
    /// `kernel::tiled::run` on the GPU.
    pub(crate) fn kernel_sums(&self, req: &Request<f32>) -> Result<Output<f32>, String> {
        let g = self.lock()?;
        let st = &g.stream;
        let d = req.domains.first().map_or(0, |x| x.z.ncols());
        let c = req.domains.first().map_or(0, |x| x.y.ncols());
        let doms = upload_domains(st, req, d)?;
        let blocks = blocks_of(req);
        let mut acc = alloc_accumulators(st, req, &doms, d)?;
        let tile = doms.iter().map(|x| x.n.min(TILE)).max().unwrap_or(0).max(1);
        let mut scratch = Scratch::new(st, tile, c)?;
        let n_pairs: usize = blocks.iter().map(|&(a, b)| ranges(doms[a].n).len() * ranges(doms[b].n).len()).sum();
        let mut slots = st.alloc_zeros::<f32>(n_pairs.max(1) * c * c).map_err(err("allocating S"))?;
        let inv_h = (1.0 / req.h) as f32;
        let mut pair = 0usize;
        let mut pairs_of_block = Vec::with_capacity(blocks.len());
        for &(a, b) in &blocks {
            let gammas = upload_gammas(st, req, a, b)?;
            let inputs = BlockInputs { a, b, doms: &doms, gammas: &gammas, c, d, inv_h };
            let first_pair = pair;
            for ri in ranges(doms[a].n) {
                for rj in ranges(doms[b].n) {
                    let slot = &mut slots.slice_mut(pair * c * c..(pair + 1) * c * c);
                    tile_pair(&g, &inputs, (ri.clone(), rj), &mut scratch, slot, &mut acc)?;
                    pair += 1;
                }
            }
            pairs_of_block.push(first_pair..pair);
        }
        let s = sum_blocks(&st.clone_dtoh(&slots).map_err(err("downloading S"))?, &blocks, &pairs_of_block, c);
        let values = objective_values(req, &s);
        let grads = finish_gradients(&g, &doms, &mut acc, d, (2.0 / req.h) as f32)?;
        st.synchronize().map_err(err("synchronising"))?;
        Ok(Output { s, values, grads })
    }
}

/// One pair of row tiles (I of a, J of b): K, its S part Y_Iᵀ (K Y_J) into `slot`, and for
/// every objective with a term on (a, b) the gradient sums of H = (Y_I Γ Y_Jᵀ) ∘ K.
fn tile_pair(
    g: &Inner,
    blk: &BlockInputs,
    (ri, rj): (std::ops::Range<usize>, std::ops::Range<usize>),
    sc: &mut Scratch,
    slot: &mut CudaViewMut<f32>,
    acc: &mut [Vec<Option<Accumulator>>],
) -> Result<(), String> {
    let BlockInputs { a, b, doms, c, d, .. } = *blk;
    let (p, q) = (ri.len(), rj.len());
    let (za, zb) = (doms[a].z.slice(ri.start * d..ri.end * d), doms[b].z.slice(rj.start * d..rj.end * d));
    let (ya, yb) = (doms[a].y.slice(ri.start * c..ri.end * c), doms[b].y.slice(rj.start * c..rj.end * c));
    // K = Gaussian of Z_I Z_Jᵀ.
    g.gemm_rm((false, true), (p, q, d), 1.0, (&za, d), (&zb, d), 0.0, (&mut sc.k.slice_mut(..p * q), q))?;
    launch_gauss(g, &mut sc.k, &doms[a].norms.slice(ri.clone()), &doms[b].norms.slice(rj.clone()), p, q, blk.inv_h)?;
    let kv = sc.k.slice(..p * q);
    // S part = Y_Iᵀ (K Y_J).
    g.gemm_rm((false, false), (p, c, q), 1.0, (&kv, q), (&yb, c), 0.0, (&mut sc.ky.slice_mut(..p * c), c))?;
    g.gemm_rm((true, false), (c, c, p), 1.0, (&ya, c), (&sc.ky.slice(..p * c), c), 0.0, (slot, c))?;
    for (o, gm) in blk.gammas {
        // H = (Y_I Γ Y_Jᵀ) ∘ K, built in m.
        g.gemm_rm((false, false), (p, c, c), 1.0, (&ya, c), (&gm.slice(..), c), 0.0, (&mut sc.yg.slice_mut(..p * c), c))?;
        g.gemm_rm((false, true), (p, q, c), 1.0, (&sc.yg.slice(..p * c), c), (&yb, c), 0.0, (&mut sc.m.slice_mut(..p * q), q))?;
        launch_hadamard(g, &mut sc.m, &kv, p * q)?;
        let hv = sc.m.slice(..p * q);
        let (ga, ra) = acc[*o][a].as_mut().expect("touched");
        g.gemm_rm((false, false), (p, d, q), 1.0, (&hv, q), (&zb, d), 1.0, (&mut ga.slice_mut(ri.start * d..ri.end * d), d))?;
        g.gemm_rm((false, false), (p, 1, q), 1.0, (&hv, q), (&sc.ones.slice(..q), 1), 1.0, (&mut ra.slice_mut(ri.clone()), 1))?;
        if a != b {
            let (gb, rb) = acc[*o][b].as_mut().expect("touched");
            g.gemm_rm((true, false), (q, d, p), 1.0, (&hv, q), (&za, d), 1.0, (&mut gb.slice_mut(rj.start * d..rj.end * d), d))?;
            g.gemm_rm((true, false), (q, 1, p), 1.0, (&hv, q), (&sc.ones.slice(..p), 1), 1.0, (&mut rb.slice_mut(rj.clone()), 1))?;
        }
    }
    Ok(())
}

/// S per block: the pairs' c×c parts (downloaded, `parts`) added in f64 in a fixed order.
fn sum_blocks(parts: &[f32], blocks: &[(usize, usize)], pairs_of_block: &[std::ops::Range<usize>], c: usize) -> Vec<((usize, usize), Array2<f64>)> {
    blocks
        .iter()
        .zip(pairs_of_block)
        .map(|(&blk, range)| {
            let mut sum = Array2::<f64>::zeros((c, c));
            for p in range.clone() {
                sum.iter_mut().zip(&parts[p * c * c..(p + 1) * c * c]).for_each(|(s, &v)| *s += v as f64);
            }
            (blk, sum)
        })
        .collect()
}

/// Each objective's value Σ_terms ⟨Γ, S^{ab}⟩.
fn objective_values(req: &Request<f32>, s: &[((usize, usize), Array2<f64>)]) -> Vec<f64> {
    let s_of = |a: usize, b: usize| &s.iter().find(|(k, _)| *k == (a, b)).expect("block computed").1;
    req.objectives.iter().map(|o| o.terms.iter().map(|(a, b, gm)| (gm * s_of(*a, *b)).sum()).sum()).collect()
}

/// ∂ℓ_o/∂Z_a = scale·(G − r ∘ Z_a) per objective and domain, downloaded (zeros where untouched).
fn finish_gradients(g: &Inner, doms: &[Dom], acc: &mut [Vec<Option<Accumulator>>], d: usize, scale: f32) -> Result<Vec<Vec<Array2<f32>>>, String> {
    let mut grads = Vec::with_capacity(acc.len());
    for row in acc.iter_mut() {
        let mut per_dom = Vec::with_capacity(doms.len());
        for (dm, slot) in doms.iter().zip(row.iter_mut()) {
            per_dom.push(match slot {
                None => Array2::zeros((dm.n, d)),
                Some((ga, ra)) => {
                    launch_finish(g, ga, &dm.z.slice(..), &ra.slice(..), dm.n, d, scale)?;
                    let host = g.stream.clone_dtoh(ga).map_err(err("downloading gradients"))?;
                    Array2::from_shape_vec((dm.n, d), host).map_err(|e| e.to_string())?
                }
            });
        }
        grads.push(per_dom);
    }
    Ok(grads)
}

/// Each domain's centred rows (pooled mean, f64), labels and squared row norms on the device.
fn upload_domains(st: &std::sync::Arc<CudaStream>, req: &Request<f32>, d: usize) -> Result<Vec<Dom>, String> {
    let total: usize = req.domains.iter().map(|x| x.z.nrows()).sum();
    let mut mean = Array1::<f64>::zeros(d);
    for dm in req.domains {
        for row in dm.z.rows() {
            mean.iter_mut().zip(row).for_each(|(m, &v)| *m += v as f64);
        }
    }
    if total > 0 {
        mean /= total as f64;
    }
    let mean32: Vec<f32> = mean.iter().map(|&v| v as f32).collect();
    req.domains
        .iter()
        .map(|dm| {
            let n = dm.z.nrows();
            let mut z = Vec::with_capacity(n * d);
            let mut norms = Vec::with_capacity(n);
            for row in dm.z.rows() {
                let start = z.len();
                z.extend(row.iter().zip(&mean32).map(|(&v, &m)| v - m));
                norms.push(z[start..].iter().map(|&v| v as f64 * v as f64).sum::<f64>() as f32);
            }
            let y: Vec<f32> = dm.y.as_standard_layout().iter().copied().collect();
            Ok(Dom {
                z: st.clone_htod(&z).map_err(err("uploading Z"))?,
                y: st.clone_htod(&y).map_err(err("uploading labels"))?,
                norms: st.clone_htod(&norms).map_err(err("uploading norms"))?,
                n,
            })
        })
        .collect()
}

fn launch_gauss(
    g: &Inner,
    kbuf: &mut CudaSlice<f32>,
    na: &CudaView<f32>,
    nb: &CudaView<f32>,
    p: usize,
    q: usize,
    inv_h: f32,
) -> Result<(), String> {
    let (pi, qi) = (p as i32, q as i32);
    let mut lb = g.stream.launch_builder(&g.kernels.gauss);
    lb.arg(kbuf).arg(na).arg(nb).arg(&pi).arg(&qi).arg(&inv_h);
    // SAFETY: the kernel reads p + q norms and reads/writes p·q values of kbuf.
    unsafe { lb.launch(launch_config(p * q)) }.map(|_| ()).map_err(err("kernel gauss"))
}

fn launch_hadamard(g: &Inner, m: &mut CudaSlice<f32>, k: &CudaView<f32>, total: usize) -> Result<(), String> {
    let n = total as i64;
    let mut lb = g.stream.launch_builder(&g.kernels.hadamard);
    lb.arg(m).arg(k).arg(&n);
    // SAFETY: both buffers hold at least `total` values.
    unsafe { lb.launch(launch_config(total)) }.map(|_| ()).map_err(err("kernel hadamard"))
}

fn launch_finish(
    g: &Inner,
    grad: &mut CudaSlice<f32>,
    z: &CudaView<f32>,
    r: &CudaView<f32>,
    n: usize,
    d: usize,
    scale: f32,
) -> Result<(), String> {
    let (ni, di) = (n as i32, d as i32);
    let mut lb = g.stream.launch_builder(&g.kernels.finish);
    lb.arg(grad).arg(z).arg(r).arg(&ni).arg(&di).arg(&scale);
    // SAFETY: grad and z hold n·d values, r holds n.
    unsafe { lb.launch(launch_config(n * d)) }.map(|_| ()).map_err(err("kernel finish"))
}
