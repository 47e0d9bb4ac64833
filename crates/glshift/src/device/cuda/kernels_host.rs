//! The GPU's kernels (`kernels.cu`) built by the host C compiler, where `EACH` is a plain loop,
//! and the network's checked against the Rust layers they stand in for on the GPU: BatchNorm
//! forward and backward with statistics from leading rows, every activation both ways, bias,
//! dropout masks, AdamW, the non-finite flag. (The kernel sums' two kernels are checked through
//! the emulated `sums`, against the CPU's tiled pass.) This checks each kernel's arithmetic and
//! indexing on any machine with a C compiler; what only a GPU can check (launches, cuBLAS) is
//! `device::tests::gpu_*`. Skipped (reported) without a C compiler.

use std::process::Command;

use libloading::{Library, Symbol};
use ndarray::{s, Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::nn::{Activation, BatchNorm, BN_EPS};

/// Set to `1`, the kernels are built with the multiply-adds contracted into FMA
/// (`-ffp-contract=fast`, and `-mfma` on x86-64), as NVRTC does by default; unset, with none
/// contracted, as the GPU build is (`--fmad=false`, `kernels::OPTIONS`). CI runs the emulated
/// tests both ways, so their tolerances are seen to hold under the other rounding.
pub(crate) const FMA_ENV: &str = "GLSHIFT_EMULATE_FMA";

/// Whether [`FMA_ENV`] asks for contracted multiply-adds.
pub(crate) fn fma_requested() -> bool {
    std::env::var(FMA_ENV).is_ok_and(|v| v == "1")
}

/// The kernels as a host shared library (kept alive with its folder).
pub(crate) struct HostKernels {
    lib: Library,
    _dir: tempfile::TempDir,
    /// Whether multiply-adds were contracted into FMA ([`FMA_ENV`]).
    pub(crate) fma: bool,
    /// The TF32 mode a GPU would be in (`Backend::set_tf32`); the emulation computes in f32.
    pub(crate) tf32: std::sync::atomic::AtomicBool,
    /// Products run while that mode was on.
    pub(crate) tf32_products: std::sync::atomic::AtomicUsize,
}

/// Builds the library, or `None` (reported) where no C compiler runs. A compiler that runs
/// and rejects the source fails the test.
pub(crate) fn build() -> Option<HostKernels> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (src, out) = (dir.path().join("kernels.c"), dir.path().join("libkernels.so"));
    std::fs::write(&src, super::kernels::SOURCE).expect("write the source");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let fma = fma_requested();
    // Contraction is named either way: compilers differ in their default (GCC's ISO C mode
    // contracts nothing, Clang contracts within expressions where the target has FMA).
    let mut contract = vec![if fma { "-ffp-contract=fast" } else { "-ffp-contract=off" }];
    if fma && cfg!(target_arch = "x86_64") {
        #[cfg(target_arch = "x86_64")]
        assert!(
            std::arch::is_x86_feature_detected!("fma"),
            "{FMA_ENV}=1 but this CPU has no FMA instructions"
        );
        contract.push("-mfma");
    }
    let run = Command::new(&cc)
        .args(["-O2", "-std=c99", "-shared", "-fPIC"])
        .args(&contract)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .arg("-lm")
        .output();
    let run = match run {
        Ok(run) => run,
        Err(e) => {
            eprintln!("skipped: no C compiler ({cc}: {e})");
            return None;
        }
    };
    assert!(
        run.status.success(),
        "{cc} rejected kernels.cu:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // SAFETY: the library was just built from the kernels' source; it has no initialisers.
    let lib = unsafe { Library::new(&out) }.expect("load the kernels");
    Some(HostKernels {
        lib,
        _dir: dir,
        fma,
        tf32: Default::default(),
        tf32_products: Default::default(),
    })
}

impl HostKernels {
    pub(super) fn get<F>(&self, name: &str) -> Symbol<'_, F> {
        // SAFETY: each caller names a kernel of the source with its C signature.
        unsafe { self.lib.get(name.as_bytes()) }.unwrap_or_else(|e| panic!("kernel {name}: {e}"))
    }

    /// `scale`·(the column reduction `mode` of `col_part` over the first `rows` rows of `a`,
    /// width `d`, second operand `b`), by chunks of `chunk` rows.
    #[allow(clippy::too_many_arguments)]
    fn col_reduce(
        &self,
        a: &[f32],
        b: &[f32],
        rows: usize,
        d: usize,
        chunk: usize,
        mode: i32,
        scale: f32,
    ) -> Vec<f32> {
        let chunks = rows.div_ceil(chunk);
        let mut part = vec![0f32; chunks * d];
        type Part = unsafe extern "C" fn(*const f32, *const f32, *mut f32, i32, i32, i32, i32);
        unsafe {
            self.get::<Part>("col_part")(
                a.as_ptr(),
                b.as_ptr(),
                part.as_mut_ptr(),
                rows as i32,
                d as i32,
                chunk as i32,
                mode,
            )
        };
        self.finish(&part, chunks, d, scale)
    }

    /// `scale`·column sums of the first `rows` rows of `x` (width `d`), by chunks of `chunk` rows.
    fn col_sum(&self, x: &[f32], rows: usize, d: usize, chunk: usize, scale: f32) -> Vec<f32> {
        self.col_reduce(x, x, rows, d, chunk, 0, scale)
    }

    fn finish(&self, part: &[f32], chunks: usize, d: usize, scale: f32) -> Vec<f32> {
        let mut out = vec![0f32; d];
        type Finish = unsafe extern "C" fn(*const f32, *mut f32, i32, i32, f32);
        unsafe {
            self.get::<Finish>("col_finish")(
                part.as_ptr(),
                out.as_mut_ptr(),
                chunks as i32,
                d as i32,
                scale,
            )
        };
        out
    }
}

fn random(n: usize, d: usize, rng: &mut ChaCha8Rng) -> Array2<f32> {
    Array2::from_shape_fn((n, d), |_| rng.random::<f32>() * 4.0 - 1.5)
}

fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want.iter().fold(1f32, |m, v| m.max(v.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * scale, "{what}[{i}]: {g} vs {w}");
    }
}

/// BatchNorm with statistics from the first m of n rows: mean and r by chunked column sums,
/// x̂ and y by `bn_forward`; then the backward on the leading r ≥ m rows (dβ and dγ by column
/// sums, dx by `bn_backward`), all against `BatchNorm::forward`/`backward`.
#[test]
fn batch_norm_kernels_match_the_layer() {
    let Some(k) = build() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (n, d, m, r, chunk) = (37, 5, 23, 30, 4);
    let h = random(n, d, &mut rng);
    let mut bn = BatchNorm::<f32>::new(d);
    bn.gamma = Array1::from_shape_fn(d, |_| rng.random::<f32>() + 0.5);
    bn.beta = Array1::from_shape_fn(d, |_| rng.random::<f32>() - 0.5);
    let (want_y, cache) = bn.forward(h.clone(), m);

    let hs = h.as_slice().unwrap();
    let inv_m = 1.0 / m as f32;
    let mean = k.col_sum(hs, m, d, chunk, inv_m);
    let mut rstd = k.col_reduce(hs, &mean, m, d, chunk, 1, 1.0);
    type Rstd = unsafe extern "C" fn(*mut f32, i32, f32, f32);
    unsafe { k.get::<Rstd>("bn_rstd")(rstd.as_mut_ptr(), d as i32, inv_m, BN_EPS as f32) };
    let (want_mean, want_rstd) = crate::nn::column_stats(h.slice(s![..m, ..]));
    assert_close(&mean, want_mean.as_slice().unwrap(), 1e-6, "mean");
    assert_close(&rstd, want_rstd.as_slice().unwrap(), 1e-5, "rstd");

    let (mut y, mut xhat) = (h.clone().into_raw_vec_and_offset().0, vec![0f32; n * d]);
    type Fwd = unsafe extern "C" fn(
        *mut f32,
        *mut f32,
        *const f32,
        *const f32,
        *const f32,
        *const f32,
        i64,
        i32,
    );
    unsafe {
        k.get::<Fwd>("bn_forward")(
            y.as_mut_ptr(),
            xhat.as_mut_ptr(),
            mean.as_ptr(),
            rstd.as_ptr(),
            bn.gamma.as_ptr(),
            bn.beta.as_ptr(),
            (n * d) as i64,
            d as i32,
        )
    };
    assert_close(&y, want_y.as_slice().unwrap(), 1e-5, "y");

    let dy = random(r, d, &mut rng);
    let (want_g, want_dx) = bn.backward(&cache, dy.clone());
    let mut dx = dy.into_raw_vec_and_offset().0;
    let dbeta = k.col_sum(&dx, r, d, chunk, 1.0);
    let dgamma = k.col_reduce(&dx, &xhat, r, d, chunk, 2, 1.0);
    assert_close(&dbeta, want_g.dbeta.as_slice().unwrap(), 1e-5, "dbeta");
    assert_close(&dgamma, want_g.dgamma.as_slice().unwrap(), 1e-4, "dgamma");
    type Bwd = unsafe extern "C" fn(
        *mut f32,
        *const f32,
        *const f32,
        *const f32,
        *const f32,
        *const f32,
        i64,
        i32,
        i64,
        f32,
    );
    unsafe {
        k.get::<Bwd>("bn_backward")(
            dx.as_mut_ptr(),
            xhat.as_ptr(),
            bn.gamma.as_ptr(),
            rstd.as_ptr(),
            dbeta.as_ptr(),
            dgamma.as_ptr(),
            (r * d) as i64,
            d as i32,
            m as i64,
            inv_m,
        )
    };
    assert_close(&dx, want_dx.as_slice().unwrap(), 1e-4, "dx");
}

/// Every activation, forward and backward (kinds in `act_kind`'s order), and the bias and
/// dropout-mask kernels, against the Rust code.
#[test]
fn activation_bias_and_mask_kernels_match_the_layers() {
    let Some(k) = build() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let (n, d) = (9, 7);
    let h = random(n, d, &mut rng);
    let up = random(n, d, &mut rng);
    type Act = unsafe extern "C" fn(*mut f32, i64, i32);
    type ActB = unsafe extern "C" fn(*mut f32, *const f32, i64, i32);
    for act in [
        Activation::Relu,
        Activation::LeakyRelu,
        Activation::Elu,
        Activation::Tanh,
        Activation::Identity,
    ] {
        let mut want = h.clone();
        act.forward_inplace(&mut want);
        let mut got = h.clone().into_raw_vec_and_offset().0;
        unsafe {
            k.get::<Act>("act_forward")(
                got.as_mut_ptr(),
                (n * d) as i64,
                super::net::layers::act_kind(act),
            )
        };
        assert_close(&got, want.as_slice().unwrap(), 1e-6, &format!("{act:?} forward"));
        let mut want_d = up.clone();
        act.backward_inplace(want.view(), &mut want_d);
        let mut got_d = up.clone().into_raw_vec_and_offset().0;
        unsafe {
            k.get::<ActB>("act_backward")(
                got_d.as_mut_ptr(),
                want.as_ptr(),
                (n * d) as i64,
                super::net::layers::act_kind(act),
            )
        };
        assert_close(&got_d, want_d.as_slice().unwrap(), 1e-6, &format!("{act:?} backward"));
    }
    let b = Array1::from_shape_fn(d, |_| rng.random::<f32>());
    let mut got = h.clone().into_raw_vec_and_offset().0;
    type Bias = unsafe extern "C" fn(*mut f32, *const f32, i64, i32);
    unsafe { k.get::<Bias>("add_bias")(got.as_mut_ptr(), b.as_ptr(), (n * d) as i64, d as i32) };
    assert_close(&got, (&h + &b).as_slice().unwrap(), 0.0, "bias");
    let mask = crate::nn::dropout_mask::<f32>(n, d, 0.4, &mut rng);
    let mut got = h.clone().into_raw_vec_and_offset().0;
    type Mul = unsafe extern "C" fn(*mut f32, *const f32, i64);
    unsafe { k.get::<Mul>("mul_inplace")(got.as_mut_ptr(), mask.as_ptr(), (n * d) as i64) };
    assert_close(&got, (&h * &mask).as_slice().unwrap(), 0.0, "mask");
}

/// Two AdamW steps of a small network (weights decayed, biases and BatchNorm not) with the
/// constants `Adam::step_constants` gives, against `Adam::step`: the same bits (one ulp apart
/// at most where the host compiler contracts multiply-adds, `FMA_ENV`).
#[test]
fn adam_kernel_matches_the_optimiser() {
    use crate::nn::{Adam, AdamConfig, Forward, Network, NetworkConfig};
    let Some(k) = build() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let net0 =
        Network::new(4, 3, &NetworkConfig { hidden: vec![5, 2], ..Default::default() }, 7).unwrap();
    let x = random(6, 4, &mut rng);
    let pass = net0.forward(x.view(), &Forward::training(6), &mut rng);
    let grads = net0.backward(x.view(), &pass, random(6, 3, &mut rng).view(), None);
    let cfg = AdamConfig { lr: 0.01, ..Default::default() };
    let (mut want_net, mut want_adam) = (net0.clone(), Adam::new(&cfg, &net0));
    let (mut got_net, mut got_adam) = (net0.clone(), Adam::new(&cfg, &net0));
    type Step = unsafe extern "C" fn(
        *mut f32,
        *const f32,
        *mut f32,
        *mut f32,
        i64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
    );
    for _ in 0..2 {
        want_adam.step(&mut want_net, &grads);
        got_adam.advance();
        let consts: Vec<_> =
            got_net.params().iter().map(|(kind, _)| got_adam.step_constants(*kind)).collect();
        let (ms, vs) = got_adam.moments_mut();
        for ((((_, p), g), (m, v)), c) in got_net
            .params_mut()
            .into_iter()
            .zip(grads.tensors())
            .zip(ms.iter_mut().zip(vs.iter_mut()))
            .zip(&consts)
        {
            unsafe {
                k.get::<Step>("adam")(
                    p.as_mut_ptr(),
                    g.as_ptr(),
                    m.as_mut_ptr(),
                    v.as_mut_ptr(),
                    p.len() as i64,
                    c.beta1,
                    c.beta2,
                    c.lr,
                    c.eps,
                    c.bias1,
                    c.bias2,
                    c.keep,
                )
            };
        }
    }
    let bits = |net: &Network| {
        net.params()
            .iter()
            .flat_map(|(_, p)| p.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    };
    // Computed in double and rounded to f32 once: without FMA (as the GPU builds it,
    // `--fmad=false`) the same bits as `Adam::step`; with multiply-adds contracted, a double
    // that differs in its last bits can round to the neighbouring f32: one ulp at most.
    let tol = u64::from(k.fma);
    let close = |got: &[u32], want: &[u32], what: &str| {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let ulps = (i64::from(*g) - i64::from(*w)).unsigned_abs();
            assert!(ulps <= tol, "{what}[{i}]: {} vs {}", f32::from_bits(*g), f32::from_bits(*w));
        }
    };
    close(&bits(&got_net), &bits(&want_net), "parameters");
    assert_ne!(bits(&got_net), bits(&net0));
    let moment_bits = |a: &Adam| {
        a.moments().0.iter().flat_map(|m| m.iter().map(|v| v.to_bits())).collect::<Vec<_>>()
    };
    close(&moment_bits(&got_adam), &moment_bits(&want_adam), "first moments");
}

/// The flag is raised by a NaN or an infinity and by nothing else.
#[test]
fn nonfinite_flag_kernel_sees_nan_and_infinity() {
    let Some(k) = build() else { return };
    type Flag = unsafe extern "C" fn(*const f32, i64, *mut f32);
    for (values, want) in [
        (vec![1.0f32, -2.0, 0.0], 0.0),
        (vec![1.0, f32::NAN, 0.0], 1.0),
        (vec![f32::NEG_INFINITY, 1.0], 1.0),
    ] {
        let mut flag = 0f32;
        unsafe { k.get::<Flag>("flag_nonfinite")(values.as_ptr(), values.len() as i64, &mut flag) };
        assert_eq!(flag, want, "{values:?}");
    }
}
