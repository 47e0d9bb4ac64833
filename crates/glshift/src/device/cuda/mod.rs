//! One CUDA GPU: the driver and cuBLAS through `cudarc`, NVRTC opened by glshift (`nvrtc`), all
//! loaded at run time (`dynamic-loading`), so a machine without them builds, tests and runs on
//! the CPU. Which files are used is checked before any is used (`libs`, docs/gpu.md).
//!
//! Row-major ndarray data meets column-major cuBLAS through one identity: a row-major m×n
//! buffer is the column-major n×m matrix of its transpose, so C = op(A)·op(B) (row-major) is
//! Cᵀ = op(B)ᵀ·op(A)ᵀ (column-major), the same operation flags with the operands swapped
//! ([`Inner::gemm_rm`]).

use std::sync::{Arc, Mutex, OnceLock};

use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut};
use ndarray::{Array2, ArrayView2};

mod backend;
#[cfg(test)]
pub(crate) mod host_backend;
mod kernels;
#[cfg(test)]
pub(crate) mod kernels_host;
mod libs;
pub(crate) mod net;
mod nvrtc;
mod reduce;
pub(crate) mod resident;
mod signatures;
pub(crate) mod sums;
mod sums_layout;
mod sums_request;
mod sums_rows;

pub(crate) use backend::Backend;
use kernels::Kernels;
pub(crate) use net::{DevNet, DevSnapshot};

/// The process's GPU (device 0), shared by every thread; operations are serialised.
pub struct Gpu {
    name: String,
    /// The libraries it was opened with and how the kernels were built ([`Gpu::libraries`]).
    libraries: String,
    inner: Mutex<Inner>,
}

struct Inner {
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    /// The kernels of `kernels.cu`, for the network (`net`) and the kernel sums (`sums`).
    kernels: Kernels,
    pins: Vec<Pinned>,
    next_pin: usize,
}

/// A host matrix kept on the device: `len` f32 from `host` (an address, for lookups only).
struct Pinned {
    id: usize,
    host: usize,
    len: usize,
    dev: CudaSlice<f32>,
}

/// A product's operand on the device: a pinned matrix's memory or an upload of its own.
enum Buf {
    Pin { index: usize, offset: usize, len: usize },
    Own(CudaSlice<f32>),
}

/// A matrix operand of a row-major product: its buffer, whether it is stored transposed, and
/// the leading dimension (row stride) of the stored matrix.
struct Operand {
    buf: Buf,
    trans: bool,
    ld: usize,
}

pub(super) fn err<E: std::fmt::Debug>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{what}: {e:?}")
}

impl Gpu {
    /// The GPU, found, opened and its kernels compiled once per process; or why there is none.
    pub fn get() -> Result<Arc<Gpu>, String> {
        static GPU: OnceLock<Result<Arc<Gpu>, String>> = OnceLock::new();
        GPU.get_or_init(|| {
            // cudarc panics where a symbol is missing from an old library: contain it.
            std::panic::catch_unwind(Gpu::open)
                .unwrap_or_else(|payload| {
                    let what = payload
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| payload.downcast_ref::<&str>().copied())
                        .unwrap_or("a panic");
                    Err(format!("the CUDA libraries failed to load: {what}"))
                })
                .map(Arc::new)
        })
        .clone()
    }

    fn open() -> Result<Gpu, String> {
        // SAFETY: this only tries to open the shared library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            let tried = cudarc::get_lib_name_candidates("cuda").join(", ");
            return Err(format!("no CUDA driver library found (tried {tried})"));
        }
        let driver = libs::driver_version()?;
        libs::check_driver(driver)?;
        let count = CudaContext::device_count().map_err(err("cuInit / device count"))?;
        if count < 1 {
            return Err("the CUDA driver reports no device".into());
        }
        // Both checked before cudarc opens cuBLAS or anything is compiled.
        let cublas = libs::check_cublas()?;
        let nvrtc = nvrtc::Nvrtc::open()?;
        let ctx = CudaContext::new(0).map_err(err("opening device 0"))?;
        let name = ctx.name().map_err(err("device name"))?;
        keep_pool_memory(&ctx)?;
        let stream = ctx.default_stream();
        let blas = CudaBlas::new(stream.clone()).map_err(err("cuBLAS handle"))?;
        let kernels = Kernels::load(&ctx, &nvrtc, driver)?;
        Ok(Gpu {
            name,
            libraries: format!(
                "driver for CUDA {}.{}; {cublas}; kernels: {}",
                driver.0, driver.1, kernels.built
            ),
            inner: Mutex::new(Inner { stream, blas, kernels, pins: Vec::new(), next_pin: 0 }),
        })
    }

    /// `kernel::tiled::run` on the GPU (`sums`).
    pub(crate) fn kernel_sums(
        &self,
        req: &crate::kernel::tiled::request::Request<f32>,
        tf32: bool,
    ) -> Result<crate::kernel::tiled::request::Output<f32>, String> {
        sums::kernel_sums(self, req, sums::TILE, tf32)
    }

    /// cuBLAS's math mode: TF32 tensor-core products for f32 (`on`) or its default.
    pub(super) fn set_tf32(&self, on: bool) -> Result<(), String> {
        use cudarc::cublas::sys::{cublasMath_t, cublasSetMathMode, cublasStatus_t};
        let mode = if on {
            cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
        } else {
            cublasMath_t::CUBLAS_DEFAULT_MATH
        };
        let g = self.lock()?;
        // SAFETY: the handle is this GPU's live cuBLAS handle; the call only sets its mode.
        match unsafe { cublasSetMathMode(*g.blas.handle(), mode) } {
            cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
            status => Err(format!("cublasSetMathMode: {status:?}")),
        }
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The driver's CUDA version, the cuBLAS opened and how the kernels were built, e.g.
    /// "driver for CUDA 13.0; cuBLAS 13.0 (its file); kernels: a cubin for sm_90 from NVRTC
    /// 13.0 (its file)".
    pub fn libraries(&self) -> &str {
        &self.libraries
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Inner>, String> {
        self.inner.lock().map_err(|_| "the GPU state was poisoned by an earlier panic".to_string())
    }

    /// Uploads `x` (standard layout) and keeps it until [`Gpu::unpin`]; returns its id.
    pub(super) fn pin(&self, x: ArrayView2<f32>) -> Result<usize, String> {
        let host = x.as_slice().ok_or("pin: not in standard layout")?;
        let mut g = self.lock()?;
        let dev = g.stream.clone_htod(host).map_err(err("uploading a pinned matrix"))?;
        let id = g.next_pin;
        g.next_pin += 1;
        g.pins.push(Pinned { id, host: host.as_ptr() as usize, len: host.len(), dev });
        Ok(id)
    }

    pub(super) fn unpin(&self, id: usize) {
        if let Ok(mut g) = self.lock() {
            g.pins.retain(|p| p.id != id);
        }
    }

    /// C = A·B on the device (A m×k, B k×n, non-negative strides).
    pub(super) fn dot(
        &self,
        a: ArrayView2<f32>,
        b: ArrayView2<f32>,
    ) -> Result<Array2<f32>, String> {
        let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
        let g = self.lock()?;
        let ao = g.operand(a)?;
        let bo = g.operand(b)?;
        let mut c = g.stream.alloc_zeros::<f32>(m * n).map_err(err("allocating a product"))?;
        let (av, bv) = (g.view(&ao.buf)?, g.view(&bo.buf)?);
        g.gemm_rm(
            (ao.trans, bo.trans),
            (m, n, k),
            1.0,
            (&av, ao.ld),
            (&bv, bo.ld),
            0.0,
            (&mut c.slice_mut(..), n),
        )?;
        let host = g.stream.clone_dtoh(&c).map_err(err("downloading a product"))?;
        g.stream.synchronize().map_err(err("synchronising"))?;
        Array2::from_shape_vec((m, n), host).map_err(|e| e.to_string())
    }
}

/// Lets the device's memory pool keep the memory freed into it (release threshold: all of it)
/// instead of returning it to the system at each synchronisation, its default: every
/// iteration allocates its activations afresh (`cuMemAllocAsync`) and frees them, so with the
/// default the same memory could be unmapped and mapped again at every iteration. Memory held
/// this way is the fit's peak use, which the memory budget already bounds. Where the device
/// has no memory pools, cudarc allocates synchronously and there is nothing to set.
fn keep_pool_memory(ctx: &Arc<CudaContext>) -> Result<(), String> {
    use cudarc::driver::result::{device, mem_pool};
    use cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    if !ctx.has_async_alloc() {
        return Ok(());
    }
    let mut threshold = u64::MAX;
    // SAFETY: the device is the context's; the attribute's value is a cuuint64_t.
    unsafe {
        let pool = device::get_mem_pool(ctx.cu_device()).map_err(err("the memory pool"))?;
        mem_pool::set_attribute(
            pool,
            CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
        .map_err(err("the memory pool's release threshold"))
    }
}

impl Inner {
    /// `a` on the device, read in place from a pinned matrix when it lies inside one.
    fn operand(&self, a: ArrayView2<f32>) -> Result<Operand, String> {
        let (m, k) = a.dim();
        if m == 0 || k == 0 {
            // Nothing to read: one zero stands for the empty matrix (CUDA allocates no empty
            // buffers), and the spans below would count from row or column -1.
            let dev = self.stream.alloc_zeros::<f32>(1).map_err(err("allocating an operand"))?;
            return Ok(Operand { buf: Buf::Own(dev), trans: false, ld: k.max(1) });
        }
        let (s0, s1) = (a.strides()[0] as usize, a.strides()[1] as usize);
        let (trans, ld, span) = if (s1 == 1 || k == 1) && (s0 >= k || m == 1) {
            (false, if m == 1 { k } else { s0 }, (m - 1) * s0 + k)
        } else if (s0 == 1 || m == 1) && (s1 >= m || k == 1) {
            (true, if k == 1 { m } else { s1 }, (k - 1) * s1 + m)
        } else {
            let owned = a.as_standard_layout();
            let dev = self
                .stream
                .clone_htod(owned.as_slice().expect("standard"))
                .map_err(err("uploading an operand"))?;
            return Ok(Operand { buf: Buf::Own(dev), trans: false, ld: k });
        };
        let start = a.as_ptr() as usize;
        let inside = self.pins.iter().position(|p| {
            start >= p.host && (start - p.host) % 4 == 0 && (start - p.host) / 4 + span <= p.len
        });
        let buf = match inside {
            Some(index) => {
                Buf::Pin { index, offset: (start - self.pins[index].host) / 4, len: span }
            }
            None => {
                // SAFETY: the span runs from the view's first to its last element, inside the
                // array the view borrows.
                let host = unsafe { std::slice::from_raw_parts(a.as_ptr(), span) };
                Buf::Own(self.stream.clone_htod(host).map_err(err("uploading an operand"))?)
            }
        };
        Ok(Operand { buf, trans, ld })
    }

    fn view<'b>(&'b self, buf: &'b Buf) -> Result<CudaView<'b, f32>, String> {
        match buf {
            Buf::Pin { index, offset, len } => self
                .pins
                .get(*index)
                .and_then(|p| p.dev.try_slice(*offset..offset.saturating_add(*len)))
                .ok_or_else(|| {
                    format!("{len} values from offset {offset} of pinned matrix {index}")
                }),
            Buf::Own(s) => Ok(s.as_view()),
        }
    }

    /// Row-major C (m×n) = alpha·op(A)·op(B) + beta·C, op(A) m×k and op(B) k×n; `trans` says
    /// which operand is stored transposed; each operand comes with its leading dimension.
    #[allow(clippy::too_many_arguments)]
    fn gemm_rm(
        &self,
        trans: (bool, bool),
        (m, n, k): (usize, usize, usize),
        alpha: f32,
        (a, lda): (&CudaView<f32>, usize),
        (b, ldb): (&CudaView<f32>, usize),
        beta: f32,
        (c, ldc): (&mut CudaViewMut<f32>, usize),
    ) -> Result<(), String> {
        let op = |t: bool| {
            if t {
                cublasOperation_t::CUBLAS_OP_T
            } else {
                cublasOperation_t::CUBLAS_OP_N
            }
        };
        let int = |v: usize| {
            i32::try_from(v).map_err(|_| format!("dimension {v} exceeds cuBLAS's 32-bit range"))
        };
        let cfg = GemmConfig {
            transa: op(trans.1),
            transb: op(trans.0),
            m: int(n)?,
            n: int(m)?,
            k: int(k)?,
            alpha,
            lda: int(ldb)?,
            ldb: int(lda)?,
            beta,
            ldc: int(ldc)?,
        };
        // SAFETY: shapes and leading dimensions describe sub-ranges of the given buffers
        // (callers size them from the same m, n, k).
        unsafe { self.blas.gemm(cfg, b, a, c) }.map_err(err("cuBLAS sgemm"))
    }
}
