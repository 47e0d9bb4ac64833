//! Each kernel's C signature (`kernels.cu`) and the buffer lengths its scalar arguments imply:
//! checked before every launch, on the GPU and on the tests' emulation alike, so that a launch
//! with arguments out of order or a buffer too short is an error instead of a read or write
//! out of bounds.

use super::kernels::K;

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
        K::CenterRows => &[Out, In, Out, I32, I32],
        K::Gauss => &[Out, In, In, I32, I32, I32, I32, F32],
        K::GradFinish => &[Out, In, In, I32, I32, F32],
        K::GatherRows => &[Out, In, In, I32, I32, I32],
        K::ScatterAddRows => &[Out, In, In, I32, I32, I32, F32],
    }
}

fn kind<B>(a: &Arg<'_, B>) -> C {
    match a {
        Arg::In(_) => C::In,
        Arg::Out(_) => C::Out,
        Arg::I32(_) => C::I32,
        Arg::I64(_) => C::I64,
        Arg::F32(_) => C::F32,
        Arg::F64(_) => C::F64,
    }
}

/// An integer argument (non-negative once [`check_launch`] passed); 0 for any other.
pub(crate) fn int<B>(a: &Arg<'_, B>) -> usize {
    match a {
        Arg::I32(v) => usize::try_from(*v).unwrap_or(0),
        Arg::I64(v) => usize::try_from(*v).unwrap_or(0),
        _ => 0,
    }
}

/// The least length of each buffer argument of `k`, from its scalar arguments.
fn needs<B>(k: K, a: &[Arg<'_, B>]) -> Vec<(usize, usize)> {
    let chunks = |rows: usize, chunk: usize| rows.div_ceil(chunk.max(1));
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
        K::BnForward | K::BnBackward => {
            let (t, d) = (int(&a[6]), int(&a[7]));
            vec![(0, t), (1, t), (2, d), (3, d), (4, d), (5, d)]
        }
        K::ActForward => vec![(0, int(&a[1]))],
        K::ActBackward | K::MulInplace => vec![(0, int(&a[2])), (1, int(&a[2]))],
        K::Adam => (0..4).map(|i| (i, int(&a[4]))).collect(),
        K::FlagNonfinite => vec![(0, int(&a[1])), (2, 1)],
        K::CenterRows => {
            let (n, d) = (int(&a[3]), int(&a[4]));
            vec![(0, n * d), (1, d), (2, n)]
        }
        K::Gauss => {
            let (p, q) = (int(&a[5]), int(&a[6]));
            vec![(0, p * q), (1, int(&a[3]) + p), (2, int(&a[4]) + q)]
        }
        K::GradFinish => {
            let (n, d) = (int(&a[3]), int(&a[4]));
            vec![(0, n * d), (1, n * d), (2, n)]
        }
        K::GatherRows => {
            let (n, d) = (int(&a[3]), int(&a[4]));
            vec![(0, n * d), (1, int(&a[5]) * d), (2, n)]
        }
        K::ScatterAddRows => {
            let (n, d) = (int(&a[3]), int(&a[4]));
            vec![(0, int(&a[5]) * d), (1, n * d), (2, n)]
        }
    }
}

/// Checks a launch of `k` with `args`: their kinds and order against the kernel's C signature,
/// every integer non-negative, every buffer (`len` gives its values) at least as long as the
/// kernel's loops read or write.
pub(crate) fn check_launch<B>(
    k: K,
    args: &[Arg<'_, B>],
    len: impl Fn(&B) -> usize,
) -> Result<(), String> {
    let sig = signature(k);
    let kinds: Vec<C> = args.iter().map(kind).collect();
    if kinds != sig {
        return Err(format!("kernel {}: arguments {kinds:?}, signature {sig:?}", k.name()));
    }
    if let Some(i) = args
        .iter()
        .position(|a| matches!(a, Arg::I32(v) if *v < 0) || matches!(a, Arg::I64(v) if *v < 0))
    {
        return Err(format!("kernel {}: integer argument {i} is negative", k.name()));
    }
    for (i, need) in needs(k, args) {
        let have = match &args[i] {
            Arg::In(b) => len(b),
            Arg::Out(b) => len(b),
            _ => 0,
        };
        if have < need {
            return Err(format!(
                "kernel {}: argument {i} holds {have} values, needs {need}",
                k.name()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gauss over a 2×2 tile from norm offsets (oa, ob), into a buffer of 6 values, with 4 and
    /// 3 norms: `(oa, ob)` and whether two arguments are swapped.
    fn gauss(oa: i32, ob: i32, swapped: bool) -> Result<(), String> {
        let (mut k, na, nb) = (vec![0f32; 6], vec![0f32; 4], vec![0f32; 3]);
        let (p, h) = (Arg::I32(2), Arg::F32(0.5));
        let tail = if swapped { [h, Arg::I32(2)] } else { [Arg::I32(2), h] };
        let [t0, t1] = tail;
        check_launch(
            K::Gauss,
            &[Arg::Out(&mut k), Arg::In(&na), Arg::In(&nb), Arg::I32(oa), Arg::I32(ob), p, t0, t1],
            Vec::len,
        )
    }

    /// A launch that matches passes; arguments out of order, a negative integer and a buffer
    /// one value short are each one error naming the kernel and the argument.
    #[test]
    fn launches_are_checked_against_signature_signs_and_lengths() {
        assert_eq!(gauss(2, 1, false), Ok(()));
        let e = gauss(2, 1, true).unwrap_err();
        assert!(e.contains("kernel gauss") && e.contains("signature"), "{e}");
        let e = gauss(-1, 1, false).unwrap_err();
        assert!(e.contains("argument 3 is negative"), "{e}");
        // Tile J's norms start at 2 and run 2 wide: 4 values needed, 3 held.
        let e = gauss(2, 2, false).unwrap_err();
        assert!(e.contains("argument 2 holds 3 values, needs 4"), "{e}");
    }
}
