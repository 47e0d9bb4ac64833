//! The CPU's emulation of the GPU for `net` and `sums` (tests only): buffers are vectors,
//! products are ndarray's, and every launch calls the kernel of `kernels.cu` built by the host C
//! compiler. As on the GPU, each launch first checks its arguments against the kernel's C
//! signature and buffer lengths (`signatures`) and each product its operands against its
//! shapes, so a wrong launch or product fails with a message.

use std::sync::atomic::Ordering::Relaxed;

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};

use super::backend::{check_operand, stored_shapes, Arg, Backend, Src, K};
use super::kernels_host::HostKernels;
use super::signatures::{check_launch, int};

/// The fit's features, copied (row-major, `ld` columns).
pub(crate) struct HostFeat {
    x: Vec<f32>,
    ld: usize,
}

fn ptr(a: &mut Arg<'_, Vec<f32>>) -> *mut f32 {
    match a {
        // The kernels do not write their `const` inputs.
        Arg::In(b) => b.as_ptr() as *mut f32,
        Arg::Out(b) => b.as_mut_ptr(),
        _ => unreachable!("checked against the signature"),
    }
}

fn f32_(a: &Arg<'_, Vec<f32>>) -> f32 {
    match a {
        Arg::F32(v) => *v,
        _ => unreachable!("checked against the signature"),
    }
}

fn f64_(a: &Arg<'_, Vec<f32>>) -> f64 {
    match a {
        Arg::F64(v) => *v,
        _ => unreachable!("checked against the signature"),
    }
}

/// A product operand's values and leading dimension.
fn raw<'a>(s: &Src<'a, HostKernels>) -> Result<(&'a [f32], usize), String> {
    match *s {
        Src::Buf(b, ld) => Ok((b, ld)),
        Src::At(b, at, ld) => b.get(at..).map(|v| (v, ld)).ok_or_else(|| {
            format!("an operand from offset {at} of a buffer of {} values", b.len())
        }),
        Src::Feat(f) => Ok((&f.x, f.ld)),
    }
}

/// A row-major operand `(values, ld)` as the `(rows, cols)` matrix it stores.
fn stored<'a>(
    (v, ld): (&'a [f32], usize),
    (rows, cols): (usize, usize),
) -> Result<ArrayView2<'a, f32>, String> {
    check_operand(v.len(), rows, cols, ld)?;
    let need = if rows == 0 { 0 } else { (rows - 1) * ld + cols };
    ArrayView2::from_shape((rows, cols).strides((ld, 1)), &v[..need]).map_err(|e| e.to_string())
}

impl Backend for HostKernels {
    type Buf = Vec<f32>;
    type Feat = HostFeat;

    fn zeros(&self, n: usize) -> Result<Vec<f32>, String> {
        Ok(vec![0.0; n.max(1)])
    }
    fn upload(&self, host: &[f32]) -> Result<Vec<f32>, String> {
        Ok(host.to_vec())
    }
    fn download(&self, b: &Vec<f32>) -> Result<Vec<f32>, String> {
        Ok(b.clone())
    }
    fn download_into(&self, b: &Vec<f32>, host: &mut [f32]) -> Result<(), String> {
        if b.len() != host.len() {
            return Err(format!("downloading {} values into {}", b.len(), host.len()));
        }
        host.copy_from_slice(b);
        Ok(())
    }
    fn copy(&self, b: &Vec<f32>) -> Result<Vec<f32>, String> {
        Ok(b.clone())
    }
    fn len(&self, b: &Vec<f32>) -> usize {
        b.len()
    }
    fn features(&self, x: ArrayView2<f32>) -> Result<HostFeat, String> {
        Ok(HostFeat { x: x.as_standard_layout().iter().copied().collect(), ld: x.ncols() })
    }

    fn gemm_at(
        &self,
        trans: (bool, bool),
        (m, n, k): (usize, usize, usize),
        a: Src<'_, Self>,
        b: Src<'_, Self>,
        beta: f32,
        (c, at): (&mut Vec<f32>, usize),
    ) -> Result<(), String> {
        let (sa, sb) = stored_shapes(trans, (m, n, k));
        self.tf32_products.fetch_add(usize::from(self.tf32.load(Relaxed)), Relaxed);
        let (a, b) = (stored(raw(&a)?, sa)?, stored(raw(&b)?, sb)?);
        let a = if trans.0 { a.reversed_axes() } else { a };
        let b = if trans.1 { b.reversed_axes() } else { b };
        check_operand(c.len().saturating_sub(at), m, n, n)?;
        let mut cv =
            ArrayViewMut2::from_shape((m, n), &mut c[at..at + m * n]).map_err(|e| e.to_string())?;
        general_mat_mul(1.0, &a, &b, beta, &mut cv);
        Ok(())
    }

    fn launch(&self, k: K, _total: usize, args: &mut [Arg<'_, Vec<f32>>]) -> Result<(), String> {
        check_launch(k, args, Vec::len)?;
        let p: Vec<*mut f32> =
            args.iter_mut()
                .map(|a| {
                    if matches!(a, Arg::In(_) | Arg::Out(_)) {
                        ptr(a)
                    } else {
                        std::ptr::null_mut()
                    }
                })
                .collect();
        let (i32_, i64_) = (|i: usize| int(&args[i]) as i32, |i: usize| int(&args[i]) as i64);
        let name = k.name();
        type P = *mut f32;
        // SAFETY: the argument kinds match the kernel's C signature (checked above) and every
        // buffer holds at least the values the kernel's loops read or write (checked above).
        unsafe {
            match k {
                K::AddBias => self.get::<unsafe extern "C" fn(P, P, i64, i32)>(name)(
                    p[0],
                    p[1],
                    i64_(2),
                    i32_(3),
                ),
                K::ColPart => self.get::<unsafe extern "C" fn(P, P, P, i32, i32, i32, i32)>(name)(
                    p[0],
                    p[1],
                    p[2],
                    i32_(3),
                    i32_(4),
                    i32_(5),
                    i32_(6),
                ),
                K::ColFinish => self.get::<unsafe extern "C" fn(P, P, i32, i32, f32)>(name)(
                    p[0],
                    p[1],
                    i32_(2),
                    i32_(3),
                    f32_(&args[4]),
                ),
                K::BnRstd => self.get::<unsafe extern "C" fn(P, i32, f32, f32)>(name)(
                    p[0],
                    i32_(1),
                    f32_(&args[2]),
                    f32_(&args[3]),
                ),
                K::BnForward => self.get::<unsafe extern "C" fn(P, P, P, P, P, P, i64, i32)>(name)(
                    p[0],
                    p[1],
                    p[2],
                    p[3],
                    p[4],
                    p[5],
                    i64_(6),
                    i32_(7),
                ),
                K::BnBackward => self
                    .get::<unsafe extern "C" fn(P, P, P, P, P, P, i64, i32, i64, f32)>(name)(
                    p[0],
                    p[1],
                    p[2],
                    p[3],
                    p[4],
                    p[5],
                    i64_(6),
                    i32_(7),
                    i64_(8),
                    f32_(&args[9]),
                ),
                K::ActForward => {
                    self.get::<unsafe extern "C" fn(P, i64, i32)>(name)(p[0], i64_(1), i32_(2))
                }
                K::ActBackward => self.get::<unsafe extern "C" fn(P, P, i64, i32)>(name)(
                    p[0],
                    p[1],
                    i64_(2),
                    i32_(3),
                ),
                K::MulInplace => {
                    self.get::<unsafe extern "C" fn(P, P, i64)>(name)(p[0], p[1], i64_(2))
                }
                K::Adam => {
                    let f = |i: usize| f64_(&args[i]);
                    self.get::<unsafe extern "C" fn(P, P, P, P, i64, f64, f64, f64, f64, f64, f64, f64)>(name)(
                        p[0], p[1], p[2], p[3], i64_(4), f(5), f(6), f(7), f(8), f(9), f(10), f(11),
                    )
                }
                K::FlagNonfinite => {
                    self.get::<unsafe extern "C" fn(P, i64, P)>(name)(p[0], i64_(1), p[2])
                }
                K::CenterRows => self.get::<unsafe extern "C" fn(P, P, P, i32, i32)>(name)(
                    p[0],
                    p[1],
                    p[2],
                    i32_(3),
                    i32_(4),
                ),
                K::Gauss => self
                    .get::<unsafe extern "C" fn(P, P, P, i32, i32, i32, i32, f32)>(name)(
                    p[0],
                    p[1],
                    p[2],
                    i32_(3),
                    i32_(4),
                    i32_(5),
                    i32_(6),
                    f32_(&args[7]),
                ),
                K::GradFinish => self.get::<unsafe extern "C" fn(P, P, P, i32, i32, f32)>(name)(
                    p[0],
                    p[1],
                    p[2],
                    i32_(3),
                    i32_(4),
                    f32_(&args[5]),
                ),
                K::GatherRows => self.get::<unsafe extern "C" fn(P, P, P, i32, i32, i32)>(name)(
                    p[0],
                    p[1],
                    p[2],
                    i32_(3),
                    i32_(4),
                    i32_(5),
                ),
                K::ScatterAddRows => self
                    .get::<unsafe extern "C" fn(P, P, P, i32, i32, i32, f32)>(name)(
                    p[0],
                    p[1],
                    p[2],
                    i32_(3),
                    i32_(4),
                    i32_(5),
                    f32_(&args[6]),
                ),
            }
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), String> {
        Ok(())
    }

    /// The emulation computes in f32 whatever the mode; it records the mode for the tests.
    fn set_tf32(&self, on: bool) -> Result<(), String> {
        self.tf32.store(on, Relaxed);
        Ok(())
    }
}
