//! The CPU's emulation of the GPU for `net` and `sums` (tests only): buffers are vectors,
//! products are ndarray's, and every launch calls the kernel of `kernels.cu` built by the host C
//! compiler. The checks are the GPU's (`Backend`'s provided methods): each launch's arguments
//! against the kernel's C signature and buffer lengths (`signatures`), each product's operands
//! against its shapes, each download's lengths, so a wrong call fails here with the message it
//! would give on the GPU.

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
    fn raw_upload(&self, host: &[f32]) -> Result<Vec<f32>, String> {
        Ok(host.to_vec())
    }
    fn download(&self, b: &Vec<f32>) -> Result<Vec<f32>, String> {
        Ok(b.clone())
    }
    fn raw_download_into(&self, b: &Vec<f32>, host: &mut [f32]) -> Result<(), String> {
        // Checked by `Backend::download_into`; `copy_from_slice` would panic on a mismatch.
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
    fn feat_shape(&self, f: &HostFeat) -> (usize, usize) {
        (f.x.len(), f.ld)
    }

    fn raw_gemm_at(
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

    fn raw_launch(
        &self,
        k: K,
        _total: usize,
        args: &mut [Arg<'_, Vec<f32>>],
    ) -> Result<(), String> {
        // Checked by `Backend::launch`; checked again because the kernel is called through
        // raw pointers below.
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

#[cfg(test)]
mod tests {
    use super::super::backend::check_download;
    use super::*;

    /// Device calls whose lengths do not match are errors, not panics: a download into a host
    /// slice of another length, a product into an offset past its buffer or reading an operand
    /// from past its buffer, a launch with a buffer too short. The checks are `Backend`'s
    /// provided methods, which the GPU runs before cudarc's calls (whose asserts would panic).
    /// An empty tensor uploads as one value and downloads into an empty slice, as on the GPU.
    #[test]
    fn device_calls_with_mismatched_lengths_are_errors() {
        let Some(dev) = super::super::kernels_host::build() else { return };
        let three = dev.upload(&[1.0, 2.0, 3.0]).unwrap();
        let e = dev.download_into(&three, &mut [0.0; 2]).unwrap_err();
        assert!(e.contains("a buffer of 3 values into 2"), "{e}");
        let e = dev.download_into(&three, &mut [0.0; 4]).unwrap_err();
        assert!(e.contains("a buffer of 3 values into 4"), "{e}");
        let mut host = [0.0; 3];
        dev.download_into(&three, &mut host).unwrap();
        assert_eq!(host, [1.0, 2.0, 3.0]);

        let empty = dev.upload(&[]).unwrap();
        assert_eq!(dev.len(&empty), 1, "an empty upload is one value, as on the GPU");
        dev.download_into(&empty, &mut []).unwrap();
        let e = dev.download_into(&empty, &mut [0.0; 2]).unwrap_err();
        assert!(e.contains("1 values into 2"), "{e}");

        let mut c = dev.zeros(4).unwrap();
        // An empty product (m = 0) into an offset past the buffer.
        let (a, b) = (Src::Buf(&three, 1), Src::Buf(&three, 1));
        let e = dev.gemm_at((false, false), (0, 1, 1), a, b, 0.0, (&mut c, 9)).unwrap_err();
        assert!(e.contains("offset 9 of a buffer of 4 values"), "{e}");
        let (a, b) = (Src::At(&three, 5, 1), Src::Buf(&three, 1));
        let e = dev.gemm((false, false), (1, 1, 1), a, b, 0.0, &mut c).unwrap_err();
        assert!(e.contains("offset 5 of a buffer of 3 values"), "{e}");
        // A 2 × 2 product reading a 2 × 2 operand from a buffer of 3.
        let (a, b) = (Src::Buf(&three, 2), Src::Buf(&three, 1));
        let e = dev.gemm((false, false), (2, 2, 2), a, b, 0.0, &mut c).unwrap_err();
        assert!(e.contains("needs 4 values, has 3"), "{e}");

        let args = &mut [Arg::Out(&mut c), Arg::In(&three), Arg::I64(4)];
        let e = dev.launch(K::MulInplace, 4, args).unwrap_err();
        assert!(e.contains("kernel mul_inplace: argument 1 holds 3 values, needs 4"), "{e}");
    }

    #[test]
    fn downloads_need_the_same_length_or_the_empty_stand_in() {
        assert_eq!(check_download(5, 5), Ok(()));
        assert_eq!(check_download(1, 0), Ok(()));
        assert!(check_download(0, 1).is_err());
        assert!(check_download(2, 0).is_err());
        assert!(check_download(4, 5).unwrap_err().contains("4 values into 5"));
    }
}
