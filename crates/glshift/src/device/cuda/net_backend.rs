//! What the network on a device (`net`) asks of the device: f32 buffers, uploads and downloads,
//! row-major products, and launches of the kernels of `net_kernels.cu`. The GPU implements it
//! through cudarc (cuBLAS, the NVRTC-compiled kernels); the tests implement it on the CPU with
//! the same kernels built by the host C compiler (`net_host_backend`), so `net`'s buffers,
//! shapes and launch arguments are checked against the CPU's network without a GPU.

use cudarc::driver::{CudaSlice, CudaView, PushKernelArg};
use ndarray::ArrayView2;

use super::kernels::launch_config;
use super::{err, Buf as DevBuf, Gpu, Inner};

/// The kernels of `net_kernels.cu`, by the name they are compiled under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum K {
    AddBias,
    ColPart,
    ColFinish,
    BnRstd,
    BnForward,
    BnBackward,
    ActForward,
    ActBackward,
    MulInplace,
    Adam,
    FlagNonfinite,
}

impl K {
    /// Every kernel, in `net_kernels.cu`'s order.
    pub(crate) const ALL: [K; 11] = [
        K::AddBias,
        K::ColPart,
        K::ColFinish,
        K::BnRstd,
        K::BnForward,
        K::BnBackward,
        K::ActForward,
        K::ActBackward,
        K::MulInplace,
        K::Adam,
        K::FlagNonfinite,
    ];

    /// The kernel's name in the source.
    pub(crate) fn name(self) -> &'static str {
        match self {
            K::AddBias => "add_bias",
            K::ColPart => "col_part",
            K::ColFinish => "col_finish",
            K::BnRstd => "bn_rstd",
            K::BnForward => "bn_forward",
            K::BnBackward => "bn_backward",
            K::ActForward => "act_forward",
            K::ActBackward => "act_backward",
            K::MulInplace => "mul_inplace",
            K::Adam => "adam",
            K::FlagNonfinite => "flag_nonfinite",
        }
    }
}

/// One argument of a kernel launch, in the kernel's parameter order: a buffer read, a buffer
/// written, or a scalar of the C type (`int`, `long long`, `float`, `double`).
pub(crate) enum Arg<'a, B> {
    In(&'a B),
    Out(&'a mut B),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
}

/// A product's operand: a buffer of the device (row-major, with its leading dimension) or the
/// fit's features ([`NetBackend::features`]).
pub(crate) enum Src<'a, D: NetBackend + ?Sized> {
    Buf(&'a D::Buf, usize),
    Feat(&'a D::Feat),
}

/// The device operations of `net`. Errors say what failed.
pub(crate) trait NetBackend {
    /// An f32 buffer on the device.
    type Buf;
    /// Row-major features on the device (the pinned matrix, or an upload).
    type Feat;

    fn zeros(&self, n: usize) -> Result<Self::Buf, String>;
    fn upload(&self, host: &[f32]) -> Result<Self::Buf, String>;
    fn download(&self, b: &Self::Buf) -> Result<Vec<f32>, String>;
    /// Copies `b` (all of it) into `host`.
    fn download_into(&self, b: &Self::Buf, host: &mut [f32]) -> Result<(), String>;
    fn copy(&self, b: &Self::Buf) -> Result<Self::Buf, String>;
    fn len(&self, b: &Self::Buf) -> usize;
    /// `x` (row-major) for products, read where it already lies on the device.
    fn features(&self, x: ArrayView2<f32>) -> Result<Self::Feat, String>;
    /// Row-major C (m×n, leading dimension n) = op(A)·op(B) + beta·C, op(A) m×k and op(B) k×n;
    /// `trans` says which operand is stored transposed.
    fn gemm(&self, trans: (bool, bool), mnk: (usize, usize, usize), a: Src<'_, Self>, b: Src<'_, Self>, beta: f32, c: &mut Self::Buf) -> Result<(), String>;
    /// Runs kernel `k` over `total` elements with `args`.
    fn launch(&self, k: K, total: usize, args: &mut [Arg<'_, Self::Buf>]) -> Result<(), String>;
    /// Waits for the device's work.
    fn sync(&self) -> Result<(), String>;
}

/// The fit's features on the GPU: rows of a pinned matrix (by its id, so that pins released
/// meanwhile cannot shift it, an offset and a length) or an upload.
pub(crate) struct GpuFeat {
    buf: Result<(usize, usize, usize), CudaSlice<f32>>,
    ld: usize,
}

impl NetBackend for Gpu {
    type Buf = CudaSlice<f32>;
    type Feat = GpuFeat;

    fn zeros(&self, n: usize) -> Result<CudaSlice<f32>, String> {
        self.lock()?.stream.alloc_zeros::<f32>(n.max(1)).map_err(err("allocating on the GPU"))
    }

    fn upload(&self, host: &[f32]) -> Result<CudaSlice<f32>, String> {
        self.lock()?.stream.clone_htod(host).map_err(err("uploading"))
    }

    fn download(&self, b: &CudaSlice<f32>) -> Result<Vec<f32>, String> {
        let g = self.lock()?;
        let host = g.stream.clone_dtoh(b).map_err(err("downloading"))?;
        g.stream.synchronize().map_err(err("synchronising"))?;
        Ok(host)
    }

    fn download_into(&self, b: &CudaSlice<f32>, host: &mut [f32]) -> Result<(), String> {
        let g = self.lock()?;
        g.stream.memcpy_dtoh(b, host).map_err(err("downloading"))?;
        g.stream.synchronize().map_err(err("synchronising"))
    }

    fn copy(&self, b: &CudaSlice<f32>) -> Result<CudaSlice<f32>, String> {
        self.lock()?.stream.clone_dtod(b).map_err(err("copying on the GPU"))
    }

    fn len(&self, b: &CudaSlice<f32>) -> usize {
        b.len()
    }

    fn features(&self, x: ArrayView2<f32>) -> Result<GpuFeat, String> {
        let g = self.lock()?;
        let o = g.operand(x)?;
        if o.trans {
            return Err("the features are not in row-major layout".into());
        }
        let buf = match o.buf {
            DevBuf::Pin { index, offset, len } => Ok((g.pins[index].id, offset, len)),
            DevBuf::Own(s) => Err(s),
        };
        Ok(GpuFeat { buf, ld: o.ld })
    }

    fn gemm(&self, trans: (bool, bool), mnk: (usize, usize, usize), a: Src<'_, Self>, b: Src<'_, Self>, beta: f32, c: &mut CudaSlice<f32>) -> Result<(), String> {
        let g = self.lock()?;
        let ((av, lda), (bv, ldb)) = (operand_view(&g, &a)?, operand_view(&g, &b)?);
        g.gemm_rm(trans, mnk, 1.0, (&av, lda), (&bv, ldb), beta, (&mut c.slice_mut(..), mnk.1))
    }

    fn launch(&self, k: K, total: usize, args: &mut [Arg<'_, CudaSlice<f32>>]) -> Result<(), String> {
        let g = self.lock()?;
        let f = g.net.get(k);
        let mut lb = g.stream.launch_builder(f);
        for a in args.iter_mut() {
            match a {
                Arg::In(b) => lb.arg(*b),
                Arg::Out(b) => lb.arg(&mut **b),
                Arg::I32(v) => lb.arg(&*v),
                Arg::I64(v) => lb.arg(&*v),
                Arg::F32(v) => lb.arg(&*v),
                Arg::F64(v) => lb.arg(&*v),
            };
        }
        // SAFETY: `net` sizes every buffer it passes for the `total` elements of the kernel's
        // loop and passes the arguments in the kernel's parameter order and C types (the host
        // build of the same kernels checks both, `net_host_backend`).
        unsafe { lb.launch(launch_config(total.max(1))) }.map(|_| ()).map_err(|e| format!("kernel {}: {e:?}", k.name()))
    }

    fn sync(&self) -> Result<(), String> {
        self.lock()?.stream.synchronize().map_err(err("synchronising"))
    }
}

/// A product operand's device memory and leading dimension.
fn operand_view<'a>(g: &'a Inner, s: &'a Src<'a, Gpu>) -> Result<(CudaView<'a, f32>, usize), String> {
    match s {
        Src::Buf(b, ld) => Ok((b.slice(..), *ld)),
        Src::Feat(GpuFeat { buf: Err(own), ld }) => Ok((own.slice(..), *ld)),
        Src::Feat(GpuFeat { buf: Ok((id, offset, len)), ld }) => {
            let pin = g.pins.iter().find(|p| p.id == *id).ok_or("the pinned features were released during training")?;
            Ok((pin.dev.slice(*offset..*offset + *len), *ld))
        }
    }
}
