//! The CPU's emulation of the GPU for `net` (tests only): buffers are vectors, products are
//! ndarray's, and every launch calls the kernel of `net_kernels.cu` built by the host C
//! compiler. Each launch first checks its arguments against the kernel's C signature (kind and
//! order) and every buffer against the lengths its scalars imply, so a wrong launch in `net`
//! fails here with a message instead of reading out of bounds on a GPU.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};

use super::net_backend::{Arg, NetBackend, Src, K};
use super::net_kernels_host::HostKernels;

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

/// Each kernel's signature (as in `net_kernels.cu`).
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
fn raw<'a>(s: &Src<'a, HostKernels>) -> (&'a [f32], usize) {
    match *s {
        Src::Buf(b, ld) => (b, ld),
        Src::Feat(f) => (&f.x, f.ld),
    }
}

/// A row-major operand `(values, ld)` as the `rows × cols` matrix it stores.
fn stored<'a>((v, ld): (&'a [f32], usize), rows: usize, cols: usize) -> Result<ArrayView2<'a, f32>, String> {
    let need = if rows == 0 { 0 } else { (rows - 1) * ld + cols };
    if ld < cols || v.len() < need {
        return Err(format!("a {rows} × {cols} operand with leading dimension {ld} needs {need} values, has {}", v.len()));
    }
    ArrayView2::from_shape((rows, cols).strides((ld, 1)), &v[..need]).map_err(|e| e.to_string())
}

impl NetBackend for HostKernels {
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

    fn gemm(&self, (ta, tb): (bool, bool), (m, n, k): (usize, usize, usize), a: Src<'_, Self>, b: Src<'_, Self>, beta: f32, c: &mut Vec<f32>) -> Result<(), String> {
        let (av, bv) = (raw(&a), raw(&b));
        let a = if ta { stored(av, k, m)?.reversed_axes() } else { stored(av, m, k)? };
        let b = if tb { stored(bv, n, k)?.reversed_axes() } else { stored(bv, k, n)? };
        if c.len() < m * n {
            return Err(format!("the product is {m} × {n}, its buffer {} values", c.len()));
        }
        let mut cv = ArrayViewMut2::from_shape((m, n), &mut c[..m * n]).map_err(|e| e.to_string())?;
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
            }
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), String> {
        Ok(())
    }
}
