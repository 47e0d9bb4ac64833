//! Where the heavy products run: the CPU (always there, and the reference) or one CUDA GPU.
//!
//! A full-batch iteration of Algorithm 1 is two kinds of work (`docs/performance.md`):
//!
//! - the network's matrix products, forward and backward: per layer `X·W` (n×k · k×m),
//!   `Xᵀ·dY` and `dY·Wᵀ` — O(n·k·m), 64–68% of a default fit's CPU time;
//! - the fused kernel sums of MCMD, J_TU and J_DU (`kernel::tiled`):
//!   `S^{ab} = Y_aᵀ K^{ab} Y_b` with `K_ij = exp(−‖z_i − z_j‖²/h)`, the objectives
//!   `ℓ_o = Σ ⟨Γ_o^{ab}, S^{ab}⟩` and `∂ℓ_o/∂Z` — O(n²(d + c)) (`mcmd-math.md`).
//!
//! The seam is three pieces: [`dot`] and `run_tiled` (crate-internal), through which training
//! and every method compute products and kernel sums, and `training::TrainingNet`, the
//! network and its AdamW in full-batch training (pre-training and full-batch adaptation are
//! written once against it). On the CPU they are exactly the code they always were (bit for
//! bit). Inside [`scoped`] with a CUDA device, a full-batch fit keeps the network, its
//! optimiser and every activation on the GPU (`cuda::net`: cuBLAS products and the kernels of
//! `cuda/kernels.cu` for bias, BatchNorm, activations, dropout masks and AdamW), so per
//! iteration only the logits, Z for the method's terms and their gradients cross PCIe; the
//! exact kernel sums run there through cuBLAS plus two kernels of the same source (`cuda::sums`);
//! the feature matrix is uploaded once ([`Pin`]); other f32 products of at least
//! [`GPU_MIN_MACS`] multiply-adds (mini-batch training, evaluation) go through cuBLAS. The
//! loss, the hold-out NLL, BBSE and the guard read n × c outputs on the host.
//!
//! CUDA's libraries (driver, cuBLAS, NVRTC) are loaded at run time, so building and testing
//! need no CUDA toolkit; [`Device::Auto`] falls back to the CPU, with the reason in the report,
//! where a library or a device is missing, and [`Device::Cuda`] makes that an error.

use std::cell::RefCell;
use std::sync::Arc;

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

mod cuda;
pub(crate) mod training;

pub use cuda::Gpu;
pub use training::{GammaTerms, ResidentZ};

/// Products with fewer multiply-adds than this stay on the CPU under a GPU scope: below it a
/// launch and two PCIe copies cost more than the product (a 512-row × 512 × 256 layer is 67 M).
pub const GPU_MIN_MACS: usize = 1 << 22;

/// Which device a fit runs on (`device` in the config, `--device` on the command line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Device {
    /// The CPU, whatever is installed.
    Cpu,
    /// One CUDA GPU (the first); an error where none can be used.
    Cuda,
    /// CUDA where a driver, cuBLAS, NVRTC and a device are found, else the CPU (the report
    /// says which ran and why).
    #[default]
    Auto,
}

impl Device {
    /// Every device setting.
    pub const ALL: [Device; 3] = [Device::Cpu, Device::Cuda, Device::Auto];

    /// Stable name (`cpu`, `cuda`, `auto`), as in the config and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda => "cuda",
            Device::Auto => "auto",
        }
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What ran: recorded in `report.json` as `device`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceUsed {
    /// `"cpu"` or `"cuda"`.
    pub kind: String,
    /// The GPU's name, where one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Why `auto` ran on the CPU, or why a GPU run finished some products on the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Whether the GPU's exact kernel sums ran their products in TF32
    /// ([`DeviceOptions::tf32_kernel_sums`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tf32_kernel_sums: bool,
}

impl DeviceUsed {
    fn cpu(fallback: Option<String>) -> Self {
        DeviceUsed { kind: "cpu".into(), name: None, fallback, tf32_kernel_sums: false }
    }
}

/// How a GPU scope runs its work ([`scoped_with`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceOptions {
    /// The exact kernel sums' products in TF32 on tensor cores (10-bit mantissa inputs, f32
    /// sums): several times the f32 rate on recent GPUs, at a rounding of the inputs; the
    /// network's products stay f32. `tf32_kernel_sums` in the config; off by default.
    pub tf32_kernel_sums: bool,
}

/// The GPU of this process, or why there is none (probed once; see [`Gpu::get`]).
pub fn probe() -> std::result::Result<Arc<Gpu>, String> {
    Gpu::get()
}

/// Resolves `device` against a probe's outcome: `Ok(Some(gpu))` to run there, `Ok(None)` for
/// the CPU (with the reason `auto` fell back, if it did), an error for `cuda` without a GPU.
pub fn resolve(
    device: Device,
    probed: impl FnOnce() -> std::result::Result<Arc<Gpu>, String>,
) -> Result<(Option<Arc<Gpu>>, Option<String>)> {
    match device {
        Device::Cpu => Ok((None, None)),
        Device::Cuda => match probed() {
            Ok(gpu) => Ok((Some(gpu), None)),
            Err(reason) => Err(Error::Device { requested: "cuda".into(), reason }),
        },
        Device::Auto => match probed() {
            Ok(gpu) => Ok((Some(gpu), None)),
            Err(reason) => {
                Ok((None, Some(format!("no usable CUDA GPU ({reason}); ran on the CPU"))))
            }
        },
    }
}

struct Active {
    gpu: Arc<Gpu>,
    options: DeviceOptions,
    /// The first GPU failure of this scope: the product was redone on the CPU.
    failure: Option<String>,
}

thread_local! {
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
}

/// Runs `f` on `device` (the calling thread's products; worker threads stay on the CPU).
/// Returns what ran. Under `cuda`, a GPU failure during `f` is an error after `f` returns;
/// under `auto` the failed products were redone on the CPU and `fallback` says so.
pub fn scoped<R>(device: Device, f: impl FnOnce() -> Result<R>) -> Result<(R, DeviceUsed)> {
    scoped_with(device, DeviceOptions::default(), f)
}

/// [`scoped`] with `options` for the GPU's work.
pub fn scoped_with<R>(
    device: Device,
    options: DeviceOptions,
    f: impl FnOnce() -> Result<R>,
) -> Result<(R, DeviceUsed)> {
    let (gpu, fallback) = resolve(device, probe)?;
    let Some(gpu) = gpu else { return Ok((f()?, DeviceUsed::cpu(fallback))) };
    let name = gpu.name().to_string();
    crate::nn::products::set_accelerator(gpu_dot);
    crate::kernel::tiled::set_accelerator(gpu_kernel_sums);
    let previous = ACTIVE.with(|a| a.borrow_mut().replace(Active { gpu, options, failure: None }));
    let out = f();
    let ended = ACTIVE.with(|a| std::mem::replace(&mut *a.borrow_mut(), previous));
    let failure = ended.and_then(|a| a.failure);
    let out = out?;
    match (failure, device) {
        (Some(reason), Device::Cuda) => Err(Error::Device { requested: "cuda".into(), reason }),
        (failure, _) => Ok((
            out,
            DeviceUsed {
                kind: "cuda".into(),
                name: Some(name),
                fallback: failure,
                tf32_kernel_sums: options.tf32_kernel_sums,
            },
        )),
    }
}

fn active_gpu() -> Option<Arc<Gpu>> {
    ACTIVE.with(|a| a.borrow().as_ref().map(|a| a.gpu.clone()))
}

/// The options of the current GPU scope (the defaults outside one).
fn active_options() -> DeviceOptions {
    ACTIVE.with(|a| a.borrow().as_ref().map_or_else(DeviceOptions::default, |a| a.options))
}

/// Runs `f` with cuBLAS allowed to compute f32 products in TF32 on tensor cores (10-bit
/// mantissa inputs, f32 accumulation) on the scope's GPU, then restores f32 products. For
/// measurements (`glshift perf --tf32`): no fit uses it. Outside a GPU scope it only runs `f`.
/// A GPU that refuses the mode is a failure of the scope (as for any GPU operation).
pub fn allowing_tf32<R>(f: impl FnOnce() -> R) -> R {
    let Some(gpu) = active_gpu() else { return f() };
    if let Err(reason) = gpu.set_tf32(true) {
        record_failure(format!("TF32 products: {reason}"));
        return f();
    }
    let out = f();
    if let Err(reason) = gpu.set_tf32(false) {
        record_failure(format!("restoring f32 products: {reason}"));
    }
    out
}

/// Notes a GPU failure of the current scope (the work was, or will be, redone on the CPU):
/// reported as `fallback` under `auto`, an error under `cuda`.
pub(crate) fn record_failure(reason: String) {
    #[cfg(test)]
    FAILURES.with(|f| f.borrow_mut().push(reason.clone()));
    ACTIVE.with(|a| {
        if let Some(a) = a.borrow_mut().as_mut() {
            a.failure.get_or_insert(reason);
        }
    });
}

#[cfg(test)]
thread_local! {
    /// Every failure [`record_failure`] noted on this thread, scope or not: a test's device
    /// that failed and was replaced by the CPU would otherwise pass as agreeing with it.
    static FAILURES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The failures noted on this thread since the last call (tests).
#[cfg(test)]
pub(crate) fn take_failures() -> Vec<String> {
    FAILURES.with(|f| std::mem::take(&mut *f.borrow_mut()))
}

/// `C = A·B` for f32 (A m×k, B k×n, any non-negative strides) on the scope's GPU when the
/// product has at least [`GPU_MIN_MACS`] multiply-adds; `None` keeps it on the CPU. Installed
/// as the network's product accelerator (`nn::products`) while a GPU scope is active.
fn gpu_dot(a: ArrayView2<f32>, b: ArrayView2<f32>) -> Option<Array2<f32>> {
    let macs = a.nrows() * a.ncols() * b.ncols();
    if macs < GPU_MIN_MACS || a.ncols() != b.nrows() {
        return None;
    }
    let gpu = active_gpu()?;
    match gpu.dot(a, b) {
        Ok(c) => Some(c),
        Err(reason) => {
            record_failure(format!("matrix product on the GPU: {reason}"));
            None
        }
    }
}

/// Exact kernel sums on the scope's GPU; `None` keeps them on the CPU. Installed as the tiled
/// pass's accelerator (`kernel::tiled`) while a GPU scope is active.
fn gpu_kernel_sums(
    req: &crate::kernel::tiled::request::Request<f32>,
) -> Option<crate::kernel::tiled::request::Output<f32>> {
    let gpu = active_gpu()?;
    match gpu.kernel_sums(req, active_options().tf32_kernel_sums) {
        Ok(out) => Some(out),
        Err(reason) => {
            record_failure(format!("kernel sums on the GPU: {reason}"));
            None
        }
    }
}

/// Keeps an f32 matrix on the scope's GPU while the guard lives, so that products reading it
/// (or a block of its rows, or its transpose) upload nothing. A no-op outside a GPU scope.
/// The matrix must not change while pinned.
pub struct Pin {
    gpu: Option<(Arc<Gpu>, usize)>,
}

impl Pin {
    /// Pins `x` (standard layout) if a GPU scope is active and `x` is large enough to matter.
    pub fn new(x: ArrayView2<f32>) -> Pin {
        let gpu = active_gpu().filter(|_| x.is_standard_layout() && x.len() >= GPU_MIN_MACS);
        Pin {
            gpu: gpu.and_then(|g| match g.pin(x) {
                Ok(id) => Some((g, id)),
                Err(reason) => {
                    record_failure(format!("uploading the features: {reason}"));
                    None
                }
            }),
        }
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        if let Some((gpu, id)) = self.gpu.take() {
            gpu.unpin(id);
        }
    }
}

/// The GPU's kernels built for the CPU (tests: the emulated GPU of `training::GpuNet`), or
/// `None` without a C compiler.
#[cfg(test)]
pub(crate) fn cuda_host_kernels() -> Option<cuda::kernels_host::HostKernels> {
    cuda::kernels_host::build()
}

#[cfg(test)]
mod tests;
