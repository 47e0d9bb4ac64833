//! The CPU's emulation of the GPU for `net` and `sums` (tests only): buffers are vectors,
//! products are ndarray's, and every launch calls the kernel of `kernels.cu` built by the host C
//! compiler. Each launch first checks its arguments against the kernel's C signature (kind and
//! order) and every buffer against the lengths its scalars imply, and each product its
//! operands against its shapes, so a wrong launch or product fails here with a message instead
//! of reading out of bounds on a GPU.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};

use super::backend::{check_operand, stored_shapes, Arg, Backend, Src, K};
use super::kernels_host::HostKernels;

/// The fit's features, copied (row-major, `ld` columns).
pub(crate) struct HostFeat {
    x: Vec<f32>,
    ld: usize,
}

/// A parameter's C type in a kernel's signature.
#[derive(Clone, Copy, Debug, PartialEq)]
enum C {
    In,
    Out,
    I32,
    I64,
    F32,
    F64,
}

/// Each kernel's signature (as in `kernels.cu`).
fn signature(k: K) -> &'static [C] {
    use C::*;
    match k {
        K::AddBias => &[Out, In, I64, I32],
        K::ColPart => &[In, In, Out, I32, I32, I32, I32],
        K::ColFinish => &[In, Out, I32, I32, F32],
        K::BnRstd => &[Out, I32, F32, F32],
        K::BnForward => &[Out, Out, In, In, In, In, I64, I32],
        K::BnBackward => &[Out, In, In, In, In, In, I64, I32, I64, F32],
        K::ActForward => &[Out, I64, I32],
        K::ActBackward => &[Out, In, I64, I32],
        K::MulInplace => &[Out, In, I64],
        K::Adam => &[Out, In, Out, Out, I64, F64, F64, F64, F64, F64, F64, F64],
        K::FlagNonfinite => &[In, I64, Out],
        K::Gauss => &[Out, In, In, I32, I32, I32, I32, F32],
        K::GradFinish => &[Out, In, In, I32, I32, F32],
    }
}

fn int(a: &Arg<'_, Vec<f32>>) -> usize {
    match a {
        Arg::I32(v) => usize::try_from(*v).expect("a non-negative size"),
        Arg::I64(v) => usize::try_from(*v).expect("a non-negative size"),
        _ => unreachable!("checked against the signature"),
    }
}

/// The least length of each buffer argument of `k`, from its scalar arguments.
fn needs(k: K, a: &[Arg<'_, Vec<f32>>]) -> Vec<(usize, usize)> {
    let chunks = |rows: usize, chunk: usize| rows.div_ceil(chunk);
    match k {
        K::AddBias => vec![(0, int(&a[2])), (1, int(&a[3]))],
        K::ColPart => {
            let (rows, d) = (int(&a[3]), int(&a[4]));
            // The second operand: unread (mode 0), the column means (1), a matrix (2).
            let b = match int(&a[6]) {
                1 => d,
                2 => rows * d,
                _ => 0,
            };
            vec![(0, rows * d), (1, b), (2, chunks(rows, int(&a[5])) * d)]
        }
        K::ColFinish => vec![(0, int(&a[2]) * int(&a[3])), (1, int(&a[3]))],
        K::BnRstd => vec![(0, int(&a[1]))],
        K::BnForward => {
            let (t, d) = (int(&a[6]), int(&a[7]));
            vec![(0, t), (1, t), (2, d), (3, d), (4, d), (5, d)]
        }
        K::BnBackward => {
            let (t, d) = (int(&a[6]), int(&a[7]));
            vec![(0, t), (1, t), (2, d), (3, d), (4, d), (5, d)]
        }
        K::ActForward => vec![(0, int(&a[1]))],
        K::ActBackward | K::MulInplace => vec![(0, int(&a[2])), (1, int(&a[2]))],
        K::Adam => (0..4).map(|i| (i, int(&a[4]))).collect(),
        K::FlagNonfinite => vec![(0, int(&a[1])), (2, 1)],
        K::Gauss => {
            let (p, q) = (int(&a[5]), int(&a[6]));
            vec![(0, p * q), (1, int(&a[3]) + p), (2, int(&a[4]) + q)]
        }
        K::GradFinish => {
            let (n, d) = (int(&a[3]), int(&a[4]));
            vec![(0, n * d), (1, n * d), (2, n)]
        }
    }
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

fn kind(a: &Arg<'_, Vec<f32>>) -> C {
    match a {
        Arg::In(_) => C::In,
        Arg::Out(_) => C::Out,
        Arg::I32(_) => C::I32,
        Arg::I64(_) => C::I64,
        Arg::F32(_) => C::F32,
        Arg::F64(_) => C::F64,
    }
}

fn len(a: &Arg<'_, Vec<f32>>) -> usize {
    match a {
        Arg::In(b) => b.len(),
        Arg::Out(b) => b.len(),
        _ => 0,
    }
}

/// A product operand's values and leading dimension.
fn raw<'a>(s: &Src<'a, HostKernels>) -> Result<(&'a [f32], usize), String> {
    match *s {
        Src::Buf(b, ld) => Ok((b, ld)),
        Src::At(b, at, ld) => b.get(at..).map(|v| (v, ld)).ok_or_else(|| format!("an operand from offset {at} of a buffer of {} values", b.len())),
        Src::Feat(f) => Ok((&f.x, f.ld)),
    }
}

/// A row-major operand `(values, ld)` as the `(rows, cols)` matrix it stores.
fn stored<'a>((v, ld): (&'a [f32], usize), (rows, cols): (usize, usize)) -> Result<ArrayView2<'a, f32>, String> {
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

    fn gemm_at(&self, trans: (bool, bool), (m, n, k): (usize, usize, usize), a: Src<'_, Self>, b: Src<'_, Self>, beta: f32, (c, at): (&mut Vec<f32>, usize)) -> Result<(), String> {
        let (sa, sb) = stored_shapes(trans, (m, n, k));
        let (a, b) = (stored(raw(&a)?, sa)?, stored(raw(&b)?, sb)?);
        let a = if trans.0 { a.reversed_axes() } else { a };
        let b = if trans.1 { b.reversed_axes() } else { b };
        check_operand(c.len().saturating_sub(at), m, n, n)?;
        let mut cv = ArrayViewMut2::from_shape((m, n), &mut c[at..at + m * n]).map_err(|e| e.to_string())?;
        general_mat_mul(1.0, &a, &b, beta, &mut cv);
        Ok(())
    }

    fn launch(&self, k: K, _total: usize, args: &mut [Arg<'_, Vec<f32>>]) -> Result<(), String> {
        let sig = signature(k);
        let kinds: Vec<C> = args.iter().map(kind).collect();
        if kinds != sig {
            return Err(format!("kernel {}: arguments {kinds:?}, signature {sig:?}", k.name()));
        }
        for (i, need) in needs(k, args) {
            if len(&args[i]) < need {
                return Err(format!("kernel {}: argument {i} holds {} values, needs {need}", k.name(), len(&args[i])));
            }
        }
        let p: Vec<*mut f32> = args.iter_mut().map(|a| if matches!(a, Arg::In(_) | Arg::Out(_)) { ptr(a) } else { std::ptr::null_mut() }).collect();
        let (i32_, i64_) = (|i: usize| int(&args[i]) as i32, |i: usize| int(&args[i]) as i64);
        let name = k.name();
        type P = *mut f32;
        // SAFETY: the argument kinds match the kernel's C signature (checked above) and every
        // buffer holds at least the values the kernel's loops read or write (checked above).
        unsafe {
            match k {
                K::AddBias => self.get::<unsafe extern "C" fn(P, P, i64, i32)>(name)(p[0], p[1], i64_(2), i32_(3)),
                K::ColPart => self.get::<unsafe extern "C" fn(P, P, P, i32, i32, i32, i32)>(name)(p[0], p[1], p[2], i32_(3), i32_(4), i32_(5), i32_(6)),
                K::ColFinish => self.get::<unsafe extern "C" fn(P, P, i32, i32, f32)>(name)(p[0], p[1], i32_(2), i32_(3), f32_(&args[4])),
                K::BnRstd => self.get::<unsafe extern "C" fn(P, i32, f32, f32)>(name)(p[0], i32_(1), f32_(&args[2]), f32_(&args[3])),
                K::BnForward => self.get::<unsafe extern "C" fn(P, P, P, P, P, P, i64, i32)>(name)(p[0], p[1], p[2], p[3], p[4], p[5], i64_(6), i32_(7)),
                K::BnBackward => self.get::<unsafe extern "C" fn(P, P, P, P, P, P, i64, i32, i64, f32)>(name)(
                    p[0], p[1], p[2], p[3], p[4], p[5], i64_(6), i32_(7), i64_(8), f32_(&args[9]),
                ),
                K::ActForward => self.get::<unsafe extern "C" fn(P, i64, i32)>(name)(p[0], i64_(1), i32_(2)),
                K::ActBackward => self.get::<unsafe extern "C" fn(P, P, i64, i32)>(name)(p[0], p[1], i64_(2), i32_(3)),
                K::MulInplace => self.get::<unsafe extern "C" fn(P, P, i64)>(name)(p[0], p[1], i64_(2)),
                K::Adam => {
                    let f = |i: usize| f64_(&args[i]);
                    self.get::<unsafe extern "C" fn(P, P, P, P, i64, f64, f64, f64, f64, f64, f64, f64)>(name)(
                        p[0], p[1], p[2], p[3], i64_(4), f(5), f(6), f(7), f(8), f(9), f(10), f(11),
                    )
                }
                K::FlagNonfinite => self.get::<unsafe extern "C" fn(P, i64, P)>(name)(p[0], i64_(1), p[2]),
                K::Gauss => self.get::<unsafe extern "C" fn(P, P, P, i32, i32, i32, i32, f32)>(name)(
                    p[0], p[1], p[2], i32_(3), i32_(4), i32_(5), i32_(6), f32_(&args[7]),
                ),
                K::GradFinish => self.get::<unsafe extern "C" fn(P, P, P, i32, i32, f32)>(name)(p[0], p[1], p[2], i32_(3), i32_(4), f32_(&args[5])),
            }
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), String> {
        Ok(())
    }
}
