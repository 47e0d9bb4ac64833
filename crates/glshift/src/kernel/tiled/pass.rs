//! One pass over a plan's schedule: centre the rows, run the rounds of tile pairs in parallel,
//! assemble the gradients and S in a fixed order.

use std::sync::Mutex;

use ndarray::{Array1, Array2};
use rayon::prelude::*;

use super::pair::{Ctx, SPart, Scratch, TileAcc};
use super::plan::Plan;
use super::{Output, Request};
use crate::Real;

/// A vector of `len` zeros whose pages are written now, in parallel (see the accumulators).
pub(super) fn written_zeros<T: Copy + Send + Sync + num_traits::Zero>(len: usize) -> Vec<T> {
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
pub(super) fn permute_rows<T: Copy>(buf: &mut [T], d: usize, dest: &[usize]) {
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

/// Runs a request on a plan made for it ([`Plan::new`]).
pub(in crate::kernel) fn run_plan<T: Real>(req: &Request<T>, plan: &Plan) -> Output<T> {
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
