//! What the device code (the network of `net`, the kernel sums of `sums`) asks of the device:
//! f32 buffers, uploads and downloads, row-major products, and launches of the kernels of
//! `kernels.cu`. The GPU implements it through cudarc (cuBLAS, the NVRTC-compiled kernels); the
//! tests implement it on the CPU with the same kernels built by the host C compiler
//! (`host_backend`), so the device code's buffers, shapes and launch arguments are checked
//! against the CPU's network and kernel sums without a GPU.

use cudarc::driver::{CudaSlice, CudaView, PushKernelArg};
use ndarray::ArrayView2;

use super::kernels::launch_config;
pub(crate) use super::kernels::K;
use super::signatures::check_launch;
pub(crate) use super::signatures::Arg;
use super::{err, Buf as DevBuf, Gpu, Inner};

/// A product's operand: a buffer of the device (row-major, with its leading dimension), the
/// same from an offset (values skipped, leading dimension), or the fit's features
/// ([`Backend::features`]).
pub(crate) enum Src<'a, D: Backend + ?Sized> {
    Buf(&'a D::Buf, usize),
    At(&'a D::Buf, usize, usize),
    Feat(&'a D::Feat),
}

/// The values a row-major `rows × cols` operand with leading dimension `ld` spans, or why the
/// leading dimension cannot describe it.
pub(crate) fn span(rows: usize, cols: usize, ld: usize) -> Result<usize, String> {
    if ld < cols {
        return Err(format!("a {rows} × {cols} operand cannot have leading dimension {ld}"));
    }
    Ok(if rows == 0 { 0 } else { (rows - 1) * ld + cols })
}

/// Checks that an operand of `have` values holds the stored `rows × cols` matrix (leading
/// dimension `ld`) a product reads.
pub(crate) fn check_operand(
    have: usize,
    rows: usize,
    cols: usize,
    ld: usize,
) -> Result<(), String> {
    let need = span(rows, cols, ld)?;
    if have < need {
        return Err(format!(
            "a {rows} × {cols} operand with leading dimension {ld} needs {need} values, has {have}"
        ));
    }
    Ok(())
}

/// The stored shape (rows, columns) of a product's operands: op(A) is m×k, op(B) k×n.
pub(crate) fn stored_shapes(
    (ta, tb): (bool, bool),
    (m, n, k): (usize, usize, usize),
) -> ((usize, usize), (usize, usize)) {
    (if ta { (k, m) } else { (m, k) }, if tb { (n, k) } else { (k, n) })
}

/// The device operations of `net` and `sums`. Errors say what failed.
pub(crate) trait Backend {
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
    fn gemm(
        &self,
        trans: (bool, bool),
        mnk: (usize, usize, usize),
        a: Src<'_, Self>,
        b: Src<'_, Self>,
        beta: f32,
        c: &mut Self::Buf,
    ) -> Result<(), String> {
        self.gemm_at(trans, mnk, a, b, beta, (c, 0))
    }
    /// [`Backend::gemm`] into the m×n values of `c.0` from offset `c.1`. Every operand is
    /// checked to hold what the shapes read ([`check_operand`]).
    fn gemm_at(
        &self,
        trans: (bool, bool),
        mnk: (usize, usize, usize),
        a: Src<'_, Self>,
        b: Src<'_, Self>,
        beta: f32,
        c: (&mut Self::Buf, usize),
    ) -> Result<(), String>;
    /// Runs kernel `k` over `total` elements with `args`.
    fn launch(&self, k: K, total: usize, args: &mut [Arg<'_, Self::Buf>]) -> Result<(), String>;
    /// Waits for the device's work.
    fn sync(&self) -> Result<(), String>;
    /// Whether f32 products may run in TF32 (10-bit mantissa inputs, f32 sums) from now on.
    fn set_tf32(&self, on: bool) -> Result<(), String>;
}

/// The fit's features on the GPU: rows of a pinned matrix (by its id, so that pins released
/// meanwhile cannot shift it, an offset and a length) or an upload.
pub(crate) struct GpuFeat {
    buf: Result<(usize, usize, usize), CudaSlice<f32>>,
    ld: usize,
}

impl Backend for Gpu {
    type Buf = CudaSlice<f32>;
    type Feat = GpuFeat;

    fn zeros(&self, n: usize) -> Result<CudaSlice<f32>, String> {
        self.lock()?.stream.alloc_zeros::<f32>(n.max(1)).map_err(err("allocating on the GPU"))
    }

    fn upload(&self, host: &[f32]) -> Result<CudaSlice<f32>, String> {
        if host.is_empty() {
            // As `zeros(0)`: a buffer of one value, since CUDA allocates no empty buffers.
            return self.zeros(0);
        }
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

    fn gemm_at(
        &self,
        trans: (bool, bool),
        mnk: (usize, usize, usize),
        a: Src<'_, Self>,
        b: Src<'_, Self>,
        beta: f32,
        (c, at): (&mut CudaSlice<f32>, usize),
    ) -> Result<(), String> {
        let g = self.lock()?;
        let ((av, lda), (bv, ldb)) = (operand_view(&g, &a)?, operand_view(&g, &b)?);
        let ((ar, ac), (br, bc)) = stored_shapes(trans, mnk);
        check_operand(av.len(), ar, ac, lda)?;
        check_operand(bv.len(), br, bc, ldb)?;
        check_operand(c.len().saturating_sub(at), mnk.0, mnk.1, mnk.1)?;
        g.gemm_rm(trans, mnk, 1.0, (&av, lda), (&bv, ldb), beta, (&mut c.slice_mut(at..), mnk.1))
    }

    fn launch(
        &self,
        k: K,
        total: usize,
        args: &mut [Arg<'_, CudaSlice<f32>>],
    ) -> Result<(), String> {
        check_launch(k, args, CudaSlice::len)?;
        let g = self.lock()?;
        let f = g.kernels.get(k);
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
        // SAFETY: the arguments match the kernel's parameter order and C types and every
        // buffer holds what the kernel's loops read or write (`check_launch` above); `total`
        // only sizes the grid of its grid-stride loops.
        unsafe { lb.launch(launch_config(total.max(1))) }
            .map(|_| ())
            .map_err(|e| format!("kernel {}: {e:?}", k.name()))
    }

    fn sync(&self) -> Result<(), String> {
        self.lock()?.stream.synchronize().map_err(err("synchronising"))
    }

    fn set_tf32(&self, on: bool) -> Result<(), String> {
        Gpu::set_tf32(self, on)
    }
}

/// A product operand's device memory and leading dimension.
fn operand_view<'a>(
    g: &'a Inner,
    s: &'a Src<'a, Gpu>,
) -> Result<(CudaView<'a, f32>, usize), String> {
    match s {
        Src::Buf(b, ld) => Ok((b.slice(..), *ld)),
        Src::At(b, at, ld) if *at <= b.len() => Ok((b.slice(*at..), *ld)),
        Src::At(b, at, _) => {
            Err(format!("an operand from offset {at} of a buffer of {} values", b.len()))
        }
        Src::Feat(GpuFeat { buf: Err(own), ld }) => Ok((own.slice(..), *ld)),
        Src::Feat(GpuFeat { buf: Ok((id, offset, len)), ld }) => {
            let pin = g
                .pins
                .iter()
                .find(|p| p.id == *id)
                .ok_or("the pinned features were released during training")?;
            Ok((pin.dev.slice(*offset..*offset + *len), *ld))
        }
    }
}
