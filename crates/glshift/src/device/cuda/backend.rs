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

/// Checks that a buffer of `have` values can be downloaded into `want` host values: the same
/// length, or none from the one value that stands for an empty buffer (CUDA allocates no
/// empty buffers, so `zeros(0)` and the upload of nothing hold one value).
pub(crate) fn check_download(have: usize, want: usize) -> Result<(), String> {
    if have == want || (want == 0 && have == 1) {
        return Ok(());
    }
    Err(format!("downloading a buffer of {have} values into {want}"))
}

/// The stored shape (rows, columns) of a product's operands: op(A) is m×k, op(B) k×n.
pub(crate) fn stored_shapes(
    (ta, tb): (bool, bool),
    (m, n, k): (usize, usize, usize),
) -> ((usize, usize), (usize, usize)) {
    (if ta { (k, m) } else { (m, k) }, if tb { (n, k) } else { (k, n) })
}

/// The device operations of `net` and `sums`. Errors say what failed.
///
/// The operations that could read or write past a buffer (downloads into host memory,
/// products, kernel launches) are provided methods that check their arguments and then call
/// the device's `raw_*` method, so the GPU and the tests' emulation run the same checks, and
/// a call the GPU library would refuse with a panic (cudarc asserts on copy lengths and
/// slice bounds) is an error here first. The `raw_*` methods are called only by those.
pub(crate) trait Backend {
    /// An f32 buffer on the device.
    type Buf;
    /// Row-major features on the device (the pinned matrix, or an upload).
    type Feat;

    /// A buffer of `n` zeros (of one value for `n` = 0).
    fn zeros(&self, n: usize) -> Result<Self::Buf, String>;
    /// `host` on the device; nothing uploads as `zeros(0)`.
    fn upload(&self, host: &[f32]) -> Result<Self::Buf, String> {
        if host.is_empty() {
            return self.zeros(0);
        }
        self.raw_upload(host)
    }
    /// [`Backend::upload`] of a non-empty `host`.
    fn raw_upload(&self, host: &[f32]) -> Result<Self::Buf, String>;
    fn download(&self, b: &Self::Buf) -> Result<Vec<f32>, String>;
    /// Copies `b` (all of it) into `host`, of its length ([`check_download`]).
    fn download_into(&self, b: &Self::Buf, host: &mut [f32]) -> Result<(), String> {
        check_download(self.len(b), host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        self.raw_download_into(b, host)
    }
    /// [`Backend::download_into`] once checked: `host` is non-empty and `b`'s length.
    fn raw_download_into(&self, b: &Self::Buf, host: &mut [f32]) -> Result<(), String>;
    fn copy(&self, b: &Self::Buf) -> Result<Self::Buf, String>;
    fn len(&self, b: &Self::Buf) -> usize;
    /// `x` (row-major) for products, read where it already lies on the device.
    fn features(&self, x: ArrayView2<f32>) -> Result<Self::Feat, String>;
    /// The values of `f` and its leading dimension.
    fn feat_shape(&self, f: &Self::Feat) -> (usize, usize);
    /// The values a product can read from `s` (from its offset to its buffer's end) and its
    /// leading dimension, or why the offset lies past the buffer.
    fn src_shape(&self, s: &Src<'_, Self>) -> Result<(usize, usize), String> {
        match s {
            Src::Buf(b, ld) => Ok((self.len(b), *ld)),
            Src::At(b, at, ld) => match self.len(b).checked_sub(*at) {
                Some(have) => Ok((have, *ld)),
                None => Err(format!(
                    "an operand from offset {at} of a buffer of {} values",
                    self.len(b)
                )),
            },
            Src::Feat(f) => Ok(self.feat_shape(f)),
        }
    }
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
        (c, at): (&mut Self::Buf, usize),
    ) -> Result<(), String> {
        let ((ar, ac), (br, bc)) = stored_shapes(trans, mnk);
        let ((a_len, lda), (b_len, ldb)) = (self.src_shape(&a)?, self.src_shape(&b)?);
        check_operand(a_len, ar, ac, lda)?;
        check_operand(b_len, br, bc, ldb)?;
        let c_len = self.len(c).checked_sub(at).ok_or_else(|| {
            format!("a product into offset {at} of a buffer of {} values", self.len(c))
        })?;
        check_operand(c_len, mnk.0, mnk.1, mnk.1)?;
        self.raw_gemm_at(trans, mnk, a, b, beta, (c, at))
    }
    /// [`Backend::gemm_at`] once checked.
    fn raw_gemm_at(
        &self,
        trans: (bool, bool),
        mnk: (usize, usize, usize),
        a: Src<'_, Self>,
        b: Src<'_, Self>,
        beta: f32,
        c: (&mut Self::Buf, usize),
    ) -> Result<(), String>;
    /// Runs kernel `k` over `total` elements with `args`, checked against the kernel's
    /// signature and buffer lengths first ([`check_launch`]).
    fn launch(&self, k: K, total: usize, args: &mut [Arg<'_, Self::Buf>]) -> Result<(), String> {
        check_launch(k, args, |b| self.len(b))?;
        self.raw_launch(k, total, args)
    }
    /// [`Backend::launch`] once checked.
    fn raw_launch(&self, k: K, total: usize, args: &mut [Arg<'_, Self::Buf>])
        -> Result<(), String>;
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

    fn raw_upload(&self, host: &[f32]) -> Result<CudaSlice<f32>, String> {
        self.lock()?.stream.clone_htod(host).map_err(err("uploading"))
    }

    fn download(&self, b: &CudaSlice<f32>) -> Result<Vec<f32>, String> {
        let g = self.lock()?;
        let host = g.stream.clone_dtoh(b).map_err(err("downloading"))?;
        g.stream.synchronize().map_err(err("synchronising"))?;
        Ok(host)
    }

    fn raw_download_into(&self, b: &CudaSlice<f32>, host: &mut [f32]) -> Result<(), String> {
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

    fn feat_shape(&self, f: &GpuFeat) -> (usize, usize) {
        match &f.buf {
            Ok((_, _, len)) => (*len, f.ld),
            Err(own) => (own.len(), f.ld),
        }
    }

    fn raw_gemm_at(
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
        // The checks of `gemm_at` passed, so the slice lies inside `c`; checked again
        // because cudarc panics on a slice out of bounds.
        let len = c.len();
        let mut cv = c
            .try_slice_mut(at..)
            .ok_or_else(|| format!("a product into offset {at} of a buffer of {len} values"))?;
        g.gemm_rm(trans, mnk, 1.0, (&av, lda), (&bv, ldb), beta, (&mut cv, mnk.1))
    }

    fn raw_launch(
        &self,
        k: K,
        total: usize,
        args: &mut [Arg<'_, CudaSlice<f32>>],
    ) -> Result<(), String> {
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
        // buffer holds what the kernel's loops read or write (`check_launch`, which
        // `Backend::launch` ran before this); `total` only sizes the grid of its grid-stride
        // loops.
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
    let outside = |at: usize, len: usize, of: usize| {
        format!("an operand of {len} values from offset {at} of a buffer of {of} values")
    };
    match s {
        Src::Buf(b, ld) => Ok((b.as_view(), *ld)),
        Src::At(b, at, ld) => {
            b.try_slice(*at..).map(|v| (v, *ld)).ok_or_else(|| outside(*at, 0, b.len()))
        }
        Src::Feat(GpuFeat { buf: Err(own), ld }) => Ok((own.as_view(), *ld)),
        Src::Feat(GpuFeat { buf: Ok((id, offset, len)), ld }) => {
            let pin = g
                .pins
                .iter()
                .find(|p| p.id == *id)
                .ok_or("the pinned features were released during training")?;
            let view = pin.dev.try_slice(*offset..offset.saturating_add(*len));
            view.map(|v| (v, *ld)).ok_or_else(|| outside(*offset, *len, pin.dev.len()))
        }
    }
}
