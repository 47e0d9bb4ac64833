//! The network in full-batch training, wherever it lives: the seam through which the training
//! loop is written once for the CPU and the GPU.
//!
//! [`TrainingNet`] is what an iteration asks of the network: the logits of a forward pass
//! (`n × c`, on the host, where the loss, the hold-out NLL and the stopping rule read them),
//! one backward-and-AdamW step from ∂ℓ/∂logits, and copies of the state to keep the best.
//! [`HostNet`] is the CPU's `Network` and `Adam`, the exact calls the loop made before the
//! seam (results bit for bit as they were); `DevNet` keeps the parameters, the moments and
//! every activation on the GPU, so per iteration only the logits and their gradient cross PCIe.

use std::cell::RefCell;
use std::sync::Arc;

use ndarray::{Array2, ArrayView2};
use rand_chacha::ChaCha8Rng;

use super::cuda::net::DzIn;
use super::cuda::resident::Resident;
use super::cuda::{Backend, DevNet, DevSnapshot};
use super::{active_gpu, active_options, Gpu, GPU_MIN_MACS};
use crate::kernel::tiled::request::Objective;
use crate::nn::{Adam, Forward, Network, Pass};

/// A network and its optimiser in full-batch training. Errors are the device's (a GPU
/// failure); the CPU's never fails.
pub(crate) trait TrainingNet {
    /// Training-mode forward over `x` (`n × input_dim`; statistics and dropout as `fw` says,
    /// masks from `rng`), kept for [`TrainingNet::step`]; Z is kept on the host only `with_z`
    /// (the CPU's always has it).
    fn forward(
        &mut self,
        x: ArrayView2<f32>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
        with_z: bool,
    ) -> Result<(), String>;

    /// The kept pass's logits, `n × c`.
    fn logits(&self) -> ArrayView2<'_, f32>;

    /// The kept pass's Z, `n × z_dim`, where the forward kept it.
    fn z(&self) -> Option<ArrayView2<'_, f32>>;

    /// The logits (`n × c`) of a pass that is not kept (evaluation mode, for instance).
    fn logits_of(
        &mut self,
        x: ArrayView2<f32>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
    ) -> Result<Array2<f32>, String>;

    /// Backward of the kept pass (input `x`) with `d_logits` (`r × c`) on its leading r rows,
    /// plus an extra ∂ℓ/∂Z `d_z` (`r × z_dim`; then r = n), then one AdamW step. `Ok(false)`:
    /// a gradient was not finite and nothing changed.
    fn step(
        &mut self,
        x: ArrayView2<f32>,
        d_logits: ArrayView2<f32>,
        d_z: Option<ArrayView2<f32>>,
    ) -> Result<bool, String>;

    /// The kept pass's Z where it stays on a device, for kernel terms computed there
    /// ([`ResidentZ`]); `None` (the CPU's): Z is read on the host, [`TrainingNet::z`].
    fn resident(&self) -> Option<&dyn ResidentZ> {
        None
    }

    /// [`TrainingNet::step`] with the ∂ℓ/∂Z that kernel terms added on the device through
    /// [`TrainingNet::resident`] since the last forward (none added: zero); `d_logits` is
    /// `n × c`, every row of the pass.
    fn step_resident(
        &mut self,
        _x: ArrayView2<f32>,
        _d_logits: ArrayView2<f32>,
    ) -> Result<bool, String> {
        Err("Z is not kept on a device".into())
    }

    /// A host copy of the network now (for evaluations on the host).
    fn network(&self) -> Result<Network, String>;

    /// The network and optimiser on the host.
    fn into_host(self: Box<Self>) -> Result<(Network, Adam), String>;
}

/// Copies of a [`TrainingNet`]'s state, to keep the best one (pre-training's stopping rule).
pub(crate) trait Snapshots: TrainingNet {
    /// A copy of the parameters and the optimiser's state.
    type Snapshot;

    /// The state now.
    fn snapshot(&self) -> Result<Self::Snapshot, String>;

    /// Back to a state [`Snapshots::snapshot`] took.
    fn restore(&mut self, s: Self::Snapshot);
}

/// Γ terms of one objective ℓ = Σ (a, b, Γ) ⟨Γ, S^{ab}⟩ over domains a ≤ b (Γ c×c), as
/// `kernel::tiled` weighs its kernel sums.
pub type GammaTerms = Vec<(usize, usize, ndarray::Array2<f64>)>;

/// Kernel terms on the kept pass's Z where a device holds it (n × d rows of the pass, named by
/// index): the rows stay there, each term's gradient stays there until it is added, scaled,
/// into ∂ℓ/∂Z, which the network's backward reads there (the adaptation's `step_resident`).
/// Per call only indices, labels, c×c matrices and scalars cross. Errors are the device's.
pub trait ResidentZ {
    /// (1/m²) Σ_ij ‖z_i − z_j‖² over the m rows `rows` (the bandwidth rule's statistic).
    fn mean_pairwise_sq_dist(&self, rows: &[usize]) -> Result<f64, String>;

    /// The exact kernel sums (`kernel::tiled`) over `domains` (rows by index, their labels
    /// n_a × c) with `objectives` and bandwidth `h`: per objective its value and its gradient's
    /// id, held until the next forward.
    fn kernel_sums(
        &self,
        domains: &[(&[usize], ArrayView2<f32>)],
        objectives: &[GammaTerms],
        h: f64,
    ) -> Result<Vec<(f64, usize)>, String>;

    /// ‖gradient `id`‖².
    fn grad_sq_norm(&self, id: usize) -> Result<f64, String>;

    /// ∂ℓ/∂Z += `scale` · gradient `id`, on its rows.
    fn add_to_dz(&self, id: usize, scale: f32) -> Result<(), String>;
}

/// The CPU's network: `Network::forward`, `backward`/`backward_leading` and `Adam::step`.
pub(crate) struct HostNet {
    net: Network,
    adam: Adam,
    pass: Option<Pass>,
}

impl HostNet {
    pub(crate) fn new(net: Network, adam: Adam) -> HostNet {
        HostNet { net, adam, pass: None }
    }
}

const NO_PASS: &str = "no forward pass kept";

impl TrainingNet for HostNet {
    fn forward(
        &mut self,
        x: ArrayView2<f32>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
        _with_z: bool,
    ) -> Result<(), String> {
        self.pass = Some(self.net.forward(x, fw, rng));
        Ok(())
    }

    fn logits(&self) -> ArrayView2<'_, f32> {
        self.pass.as_ref().expect(NO_PASS).logits.view()
    }

    fn z(&self) -> Option<ArrayView2<'_, f32>> {
        self.pass.as_ref().map(|p| p.z.view())
    }

    fn logits_of(
        &mut self,
        x: ArrayView2<f32>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
    ) -> Result<Array2<f32>, String> {
        Ok(self.net.forward(x, fw, rng).logits)
    }

    fn step(
        &mut self,
        x: ArrayView2<f32>,
        d_logits: ArrayView2<f32>,
        d_z: Option<ArrayView2<f32>>,
    ) -> Result<bool, String> {
        let pass = self.pass.as_ref().ok_or(NO_PASS)?;
        let grads = match d_z {
            Some(d_z) => self.net.backward(x, pass, d_logits, Some(d_z)),
            None => self.net.backward_leading(x, pass, d_logits),
        };
        if !grads.is_finite() {
            return Ok(false);
        }
        self.adam.step(&mut self.net, &grads);
        Ok(true)
    }

    fn network(&self) -> Result<Network, String> {
        Ok(self.net.clone())
    }

    fn into_host(self: Box<Self>) -> Result<(Network, Adam), String> {
        Ok((self.net, self.adam))
    }
}

impl Snapshots for HostNet {
    type Snapshot = (Network, Adam);

    fn snapshot(&self) -> Result<(Network, Adam), String> {
        Ok((self.net.clone(), self.adam.clone()))
    }

    fn restore(&mut self, (net, adam): (Network, Adam)) {
        (self.net, self.adam, self.pass) = (net, adam, None);
    }
}

/// [`DevNet`] with the host copies of its kept pass's outputs: on the GPU, or (tests) on the
/// CPU's emulation of it.
pub(crate) struct GpuNet<D: Backend = Gpu> {
    dev: DevNet<D>,
    logits: Array2<f32>,
    z: Option<Array2<f32>>,
    resident: RefCell<Resident<D::Buf>>,
    /// The resident kernel sums' products in TF32 (`DeviceOptions::tf32_kernel_sums`).
    tf32_sums: bool,
}

impl<D: Backend> GpuNet<D> {
    /// `net` and `adam` uploaded to `dev`.
    pub(crate) fn upload(dev: Arc<D>, net: Network, adam: Adam) -> Result<GpuNet<D>, String> {
        Ok(GpuNet {
            dev: DevNet::upload(dev, net, adam)?,
            logits: Array2::zeros((0, 0)),
            z: None,
            resident: RefCell::default(),
            tf32_sums: false,
        })
    }

    /// The same, its resident kernel sums' products in TF32 where `on`.
    pub(crate) fn with_tf32_sums(self, on: bool) -> GpuNet<D> {
        GpuNet { tf32_sums: on, ..self }
    }

    /// The kept pass's Z on the device, or why there is none.
    fn kept_z(&self) -> Result<(&D::Buf, usize, usize), String> {
        self.dev.kept_z().ok_or_else(|| "no forward pass with a Z is kept".into())
    }
}

impl<D: Backend> ResidentZ for GpuNet<D> {
    fn mean_pairwise_sq_dist(&self, rows: &[usize]) -> Result<f64, String> {
        Resident::mean_pairwise_sq_dist(&**self.dev.device(), self.kept_z()?, rows)
    }

    fn kernel_sums(
        &self,
        domains: &[(&[usize], ArrayView2<f32>)],
        objectives: &[GammaTerms],
        h: f64,
    ) -> Result<Vec<(f64, usize)>, String> {
        let objectives: Vec<Objective> =
            objectives.iter().map(|terms| Objective { terms: terms.clone() }).collect();
        self.resident.borrow_mut().kernel_sums(
            &**self.dev.device(),
            self.kept_z()?,
            domains,
            &objectives,
            h,
            self.tf32_sums,
        )
    }

    fn grad_sq_norm(&self, id: usize) -> Result<f64, String> {
        self.resident.borrow().grad_sq_norm(&**self.dev.device(), id, self.kept_z()?.2)
    }

    fn add_to_dz(&self, id: usize, scale: f32) -> Result<(), String> {
        let (_, n, d) = self.kept_z()?;
        self.resident.borrow_mut().add_to_dz(&**self.dev.device(), id, scale, (n, d))
    }
}

impl<D: Backend> TrainingNet for GpuNet<D> {
    fn forward(
        &mut self,
        x: ArrayView2<f32>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
        with_z: bool,
    ) -> Result<(), String> {
        self.resident.get_mut().clear();
        (self.logits, self.z) = self.dev.forward(x, fw, rng, true, with_z)?;
        Ok(())
    }

    fn logits(&self) -> ArrayView2<'_, f32> {
        self.logits.view()
    }

    fn z(&self) -> Option<ArrayView2<'_, f32>> {
        self.z.as_ref().map(|z| z.view())
    }

    fn logits_of(
        &mut self,
        x: ArrayView2<f32>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
    ) -> Result<Array2<f32>, String> {
        Ok(self.dev.forward(x, fw, rng, false, false)?.0)
    }

    fn step(
        &mut self,
        x: ArrayView2<f32>,
        d_logits: ArrayView2<f32>,
        d_z: Option<ArrayView2<f32>>,
    ) -> Result<bool, String> {
        self.dev.step(x, d_logits, d_z.map_or(DzIn::None, DzIn::Host))
    }

    fn resident(&self) -> Option<&dyn ResidentZ> {
        self.dev.has_z().then_some(self as &dyn ResidentZ)
    }

    fn step_resident(
        &mut self,
        x: ArrayView2<f32>,
        d_logits: ArrayView2<f32>,
    ) -> Result<bool, String> {
        let dz = self.resident.get_mut().take_dz();
        self.dev.step(x, d_logits, dz.map_or(DzIn::None, DzIn::Device))
    }

    fn network(&self) -> Result<Network, String> {
        self.dev.network()
    }

    fn into_host(self: Box<Self>) -> Result<(Network, Adam), String> {
        self.dev.into_host()
    }
}

impl<D: Backend> Snapshots for GpuNet<D> {
    type Snapshot = DevSnapshot<D::Buf>;

    fn snapshot(&self) -> Result<DevSnapshot<D::Buf>, String> {
        self.dev.snapshot()
    }

    fn restore(&mut self, s: DevSnapshot<D::Buf>) {
        self.dev.restore(s);
        self.z = None;
        self.resident.get_mut().clear();
    }
}

/// The maker of the GPU's network when passes of `rows` rows of `d` features (all of a
/// full-batch fit's rows, or a mini-batch) should train on the scope's GPU: inside a GPU scope
/// and with a first-layer product (`width` wide) of at least [`GPU_MIN_MACS`] multiply-adds.
/// `None` keeps them on the CPU.
pub(crate) fn gpu_net_maker(
    rows: usize,
    d: usize,
    width: usize,
) -> Option<impl FnOnce(Network, Adam) -> Result<GpuNet, String>> {
    let gpu =
        active_gpu().filter(|_| rows.saturating_mul(d).saturating_mul(width) >= GPU_MIN_MACS)?;
    let tf32 = active_options().tf32_kernel_sums;
    Some(move |net, adam| GpuNet::upload(gpu, net, adam).map(|g| g.with_tf32_sums(tf32)))
}
