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

use cudarc::driver::{CudaSlice, CudaStream, CudaView, PushKernelArg};
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

impl Gpu {
    /// `kernel::tiled::run` on the GPU.
    pub(crate) fn kernel_sums(&self, req: &Request<f32>) -> Result<Output<f32>, String> {
        let g = self.lock()?;
        let st = &g.stream;
        let d = req.domains.first().map_or(0, |x| x.z.ncols());
        let c = req.domains.first().map_or(0, |x| x.y.ncols());
        let n_obj = req.objectives.len();
        let doms = upload_domains(st, req, d)?;
        let mut blocks: Vec<(usize, usize)> = req.s_blocks.clone();
        for o in &req.objectives {
            blocks.extend(o.terms.iter().map(|(a, b, _)| (*a, *b)));
        }
        blocks.sort_unstable();
        blocks.dedup();

        // Gradient accumulators G (n×d) and r (n) per objective and domain it touches.
        let mut acc: Vec<Vec<Option<Accumulator>>> = Vec::with_capacity(n_obj);
        for o in 0..n_obj {
            let mut row = Vec::with_capacity(doms.len());
            for (a, dm) in doms.iter().enumerate() {
                let touched = req.objectives[o].terms.iter().any(|(x, y, _)| *x == a || *y == a);
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
        let tile = doms.iter().map(|x| x.n.min(TILE)).max().unwrap_or(0).max(1);
        let mut kbuf = st.alloc_zeros::<f32>(tile * tile).map_err(err("allocating a tile"))?;
        let mut mbuf = st.alloc_zeros::<f32>(tile * tile).map_err(err("allocating a tile"))?;
        let mut ky = st.alloc_zeros::<f32>(tile * c.max(1)).map_err(err("allocating a tile"))?;
        let mut yg = st.alloc_zeros::<f32>(tile * c.max(1)).map_err(err("allocating a tile"))?;
        let ones = st.clone_htod(&vec![1f32; tile]).map_err(err("uploading ones"))?;
        let n_pairs: usize = blocks.iter().map(|&(a, b)| ranges(doms[a].n).len() * ranges(doms[b].n).len()).sum();
        let mut slots = st.alloc_zeros::<f32>(n_pairs.max(1) * c * c).map_err(err("allocating S"))?;
        let inv_h = (1.0 / req.h) as f32;

        let mut pair = 0usize;
        let mut pairs_of_block = Vec::with_capacity(blocks.len());
        for &(a, b) in &blocks {
            let gammas: Vec<(usize, CudaSlice<f32>)> = (0..n_obj)
                .filter_map(|o| gamma_eff(req, o, a, b).map(|gm| (o, gm)))
                .map(|(o, gm)| {
                    let v: Vec<f32> = gm.iter().map(|&x| x as f32).collect();
                    st.clone_htod(&v).map(|s| (o, s)).map_err(err("uploading Γ"))
                })
                .collect::<Result<_, _>>()?;
            let first_pair = pair;
            for ri in ranges(doms[a].n) {
                for rj in ranges(doms[b].n) {
                    let (p, q) = (ri.len(), rj.len());
                    let (za, zb) = (doms[a].z.slice(ri.start * d..ri.end * d), doms[b].z.slice(rj.start * d..rj.end * d));
                    let (ya, yb) = (doms[a].y.slice(ri.start * c..ri.end * c), doms[b].y.slice(rj.start * c..rj.end * c));
                    // K = Gaussian of Z_I Z_Jᵀ.
                    g.gemm_rm((false, true), (p, q, d), 1.0, (&za, d), (&zb, d), 0.0, (&mut kbuf.slice_mut(..p * q), q))?;
                    launch_gauss(&g, &mut kbuf, &doms[a].norms.slice(ri.clone()), &doms[b].norms.slice(rj.clone()), p, q, inv_h)?;
                    let kv = kbuf.slice(..p * q);
                    // S part = Y_Iᵀ (K Y_J).
                    g.gemm_rm((false, false), (p, c, q), 1.0, (&kv, q), (&yb, c), 0.0, (&mut ky.slice_mut(..p * c), c))?;
                    let kyv = ky.slice(..p * c);
                    g.gemm_rm((true, false), (c, c, p), 1.0, (&ya, c), (&kyv, c), 0.0, (&mut slots.slice_mut(pair * c * c..(pair + 1) * c * c), c))?;
                    pair += 1;
                    for (o, gm) in &gammas {
                        // H = (Y_I Γ Y_Jᵀ) ∘ K, built in mbuf.
                        g.gemm_rm((false, false), (p, c, c), 1.0, (&ya, c), (&gm.slice(..), c), 0.0, (&mut yg.slice_mut(..p * c), c))?;
                        g.gemm_rm((false, true), (p, q, c), 1.0, (&yg.slice(..p * c), c), (&yb, c), 0.0, (&mut mbuf.slice_mut(..p * q), q))?;
                        launch_hadamard(&g, &mut mbuf, &kv, p * q)?;
                        let hv = mbuf.slice(..p * q);
                        let (ga, ra) = acc[*o][a].as_mut().expect("touched");
                        g.gemm_rm((false, false), (p, d, q), 1.0, (&hv, q), (&zb, d), 1.0, (&mut ga.slice_mut(ri.start * d..ri.end * d), d))?;
                        g.gemm_rm((false, false), (p, 1, q), 1.0, (&hv, q), (&ones.slice(..q), 1), 1.0, (&mut ra.slice_mut(ri.clone()), 1))?;
                        if a != b {
                            let (gb, rb) = acc[*o][b].as_mut().expect("touched");
                            g.gemm_rm((true, false), (q, d, p), 1.0, (&hv, q), (&za, d), 1.0, (&mut gb.slice_mut(rj.start * d..rj.end * d), d))?;
                            g.gemm_rm((true, false), (q, 1, p), 1.0, (&hv, q), (&ones.slice(..p), 1), 1.0, (&mut rb.slice_mut(rj.clone()), 1))?;
                        }
                    }
                }
            }
            pairs_of_block.push(first_pair..pair);
        }

        // S per block, the pairs' parts added in f64 in a fixed order.
        let parts = st.clone_dtoh(&slots).map_err(err("downloading S"))?;
        let s: Vec<((usize, usize), Array2<f64>)> = blocks
            .iter()
            .zip(&pairs_of_block)
            .map(|(&blk, range)| {
                let mut sum = Array2::<f64>::zeros((c, c));
                for p in range.clone() {
                    sum.iter_mut().zip(&parts[p * c * c..(p + 1) * c * c]).for_each(|(s, &v)| *s += v as f64);
                }
                (blk, sum)
            })
            .collect();
        let s_of = |a: usize, b: usize| &s.iter().find(|(k, _)| *k == (a, b)).expect("block computed").1;
        let values: Vec<f64> = req
            .objectives
            .iter()
            .map(|o| o.terms.iter().map(|(a, b, gm)| (gm * s_of(*a, *b)).sum()).sum())
            .collect();

        let scale = (2.0 / req.h) as f32;
        let mut grads = Vec::with_capacity(n_obj);
        for row in acc.iter_mut() {
            let mut per_dom = Vec::with_capacity(doms.len());
            for (dm, slot) in doms.iter().zip(row.iter_mut()) {
                per_dom.push(match slot {
                    None => Array2::zeros((dm.n, d)),
                    Some((ga, ra)) => {
                        launch_finish(&g, ga, &dm.z.slice(..), &ra.slice(..), dm.n, d, scale)?;
                        let host = st.clone_dtoh(ga).map_err(err("downloading gradients"))?;
                        Array2::from_shape_vec((dm.n, d), host).map_err(|e| e.to_string())?
                    }
                });
            }
            grads.push(per_dom);
        }
        st.synchronize().map_err(err("synchronising"))?;
        Ok(Output { s, values, grads })
    }
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
