//! Kernel terms on the kept pass's Z, where the device holds it (`training::ResidentZ`).
//!
//! A method names rows of Z by index; their kernel sums run on them in place (`sums`, rows
//! gathered there), each objective's gradient stays on the device until the method adds it,
//! scaled, into ∂ℓ/∂Z (`scatter_add_rows`), which the network's backward reads there. What
//! crosses per request: the row indices and labels going up, the c×c S blocks, the values and
//! d column sums (the bandwidth) coming back.

use ndarray::ArrayView2;

use super::backend::{Arg, Backend, K};
use super::reduce::{col_reduce, Reduce};
use super::sums::{kernel_sums_kept, TILE};
use super::sums_request::{RowsFrom, Sums};
use super::sums_rows::{check_rows_in, gather, indices};
use crate::kernel::tiled::request::Objective;

/// One objective's gradient: per domain, the rows' gradients (n′ × d), their rows of Z (float
/// indices), and n′.
struct Held<B> {
    parts: Vec<(B, B, usize)>,
}

/// The gradients held since the last forward, and ∂ℓ/∂Z accumulated from them.
pub(crate) struct Resident<B> {
    held: Vec<Held<B>>,
    dz: Option<B>,
}

impl<B> Default for Resident<B> {
    fn default() -> Self {
        Resident { held: Vec::new(), dz: None }
    }
}

/// Z on the device: the buffer and its n × d.
pub(crate) type KeptZ<'a, B> = (&'a B, usize, usize);

impl<B> Resident<B> {
    /// Forgets every gradient and ∂ℓ/∂Z (a new pass).
    pub(crate) fn clear(&mut self) {
        self.held.clear();
        self.dz = None;
    }

    /// ∂ℓ/∂Z accumulated since the last pass (n × d), if any term added to it.
    pub(crate) fn take_dz(&mut self) -> Option<B> {
        self.dz.take()
    }

    /// (1/m²) Σ_ij ‖z_i − z_j‖² over the m rows `rows` of Z, in two passes around their mean
    /// (as `kernel::bandwidth`): column sums, then squared deviations, each d values added in
    /// f64 on the host.
    pub(crate) fn mean_pairwise_sq_dist<D: Backend<Buf = B>>(
        dev: &D,
        (z, n, d): KeptZ<B>,
        rows: &[usize],
    ) -> Result<f64, String> {
        let m = rows.len();
        if m == 0 {
            return Ok(0.0);
        }
        check_rows_in(rows, n)?;
        let idx = indices(dev, rows.iter().copied())?;
        let picked = gather(dev, z, &idx, (m, d, n))?;
        let sums = dev.download(&col_reduce(dev, Reduce::Sum, &picked, None, m, d, 1.0)?)?;
        let mean: Vec<f32> = sums.iter().map(|&s| (s as f64 / m as f64) as f32).collect();
        let dev_mean = dev.upload(&mean)?;
        let sq =
            dev.download(&col_reduce(dev, Reduce::SqDev, &picked, Some(&dev_mean), m, d, 1.0)?)?;
        Ok(2.0 * sq.iter().map(|&v| v as f64).sum::<f64>() / m as f64)
    }

    /// The exact kernel sums over `domains` (rows of Z by index, and their labels n_a × c)
    /// with `objectives` and bandwidth `h` (products in TF32 where `tf32`): each objective's
    /// value and the index of its held gradient.
    #[allow(clippy::too_many_arguments)] // the device, Z, and the request's parts as the trait takes them
    pub(crate) fn kernel_sums<D: Backend<Buf = B>>(
        &mut self,
        dev: &D,
        (z, n, d): KeptZ<B>,
        domains: &[(&[usize], ArrayView2<f32>)],
        objectives: &[Objective],
        h: f64,
        tf32: bool,
    ) -> Result<Vec<(f64, usize)>, String> {
        let sums = Sums {
            rows: domains.iter().map(|(rows, _)| RowsFrom::Device { z, n, rows }).collect(),
            labels: domains.iter().map(|(_, y)| *y).collect(),
            s_blocks: &[],
            objectives,
            h,
            d,
            tf32,
        };
        let out = kernel_sums_kept(dev, &sums, TILE)?;
        let mut ids = Vec::with_capacity(objectives.len());
        for (value, grads) in out.values.into_iter().zip(out.grads) {
            let mut parts = Vec::new();
            for (g, (rows, m)) in
                grads.into_iter().zip(&out.dest).filter_map(|(g, dest)| g.map(|g| (g, dest)))
            {
                parts.push((g, dev.copy(rows)?, *m));
            }
            ids.push((value, self.held.len()));
            self.held.push(Held { parts });
        }
        Ok(ids)
    }

    /// ‖gradient `id`‖² (Σ over its rows of Σ_j g², d column sums added in f64 on the host).
    pub(crate) fn grad_sq_norm<D: Backend<Buf = B>>(
        &self,
        dev: &D,
        id: usize,
        d: usize,
    ) -> Result<f64, String> {
        let held = self.held.get(id).ok_or("no such gradient")?;
        let mut total = 0.0;
        for (g, _, m) in &held.parts {
            let col = dev.download(&col_reduce(dev, Reduce::Dot, g, Some(g), *m, d, 1.0)?)?;
            total += col.iter().map(|&v| v as f64).sum::<f64>();
        }
        Ok(total)
    }

    /// ∂ℓ/∂Z (n × d, zeros at first) += `scale` · gradient `id` on its rows of Z.
    pub(crate) fn add_to_dz<D: Backend<Buf = B>>(
        &mut self,
        dev: &D,
        id: usize,
        scale: f32,
        (n, d): (usize, usize),
    ) -> Result<(), String> {
        let held = self.held.get(id).ok_or("no such gradient")?;
        if self.dz.is_none() {
            self.dz = Some(dev.zeros(n * d)?);
        }
        let dz = self.dz.as_mut().expect("allocated above");
        for (g, rows, m) in &held.parts {
            let [m_, d_, n_] = [*m, d, n].map(|v| Arg::I32(v as i32));
            dev.launch(
                K::ScatterAddRows,
                m * d,
                &mut [Arg::Out(dz), Arg::In(g), Arg::In(rows), m_, d_, n_, Arg::F32(scale)],
            )?;
        }
        Ok(())
    }
}
