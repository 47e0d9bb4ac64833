use super::*;
use ndarray::Array2;

fn no_gpu() -> std::result::Result<Arc<Gpu>, String> {
    Err("no CUDA driver library (libcuda.so.1) found".into())
}

#[test]
fn auto_without_a_driver_falls_back_to_the_cpu_and_says_why() {
    let (gpu, why) = resolve(Device::Auto, no_gpu).expect("auto never fails for want of a GPU");
    assert!(gpu.is_none());
    let why = why.expect("a reason");
    assert!(why.contains("libcuda.so.1") && why.contains("CPU"), "{why}");
}

#[test]
fn cuda_without_a_driver_is_one_clear_error() {
    let err = resolve(Device::Cuda, no_gpu).err().expect("an error");
    assert!(matches!(err, Error::Device { .. }), "{err}");
    assert!(err.to_string().contains("libcuda.so.1"), "{err}");
}

#[test]
fn cpu_never_probes() {
    let (gpu, why) = resolve(Device::Cpu, || panic!("probed")).expect("cpu");
    assert!(gpu.is_none() && why.is_none());
}

/// The real probe on this machine: `auto` runs whatever is found and reports it; without a
/// usable GPU (CI) the report says cpu and why.
#[test]
fn scoped_auto_reports_what_ran() {
    let (value, used) = scoped(Device::Auto, || Ok(41 + 1)).expect("auto runs");
    assert_eq!(value, 42);
    match probe() {
        Ok(gpu) => {
            assert_eq!((used.kind.as_str(), used.name.as_deref()), ("cuda", Some(gpu.name())))
        }
        Err(reason) => {
            assert_eq!(used.kind, "cpu");
            assert!(used.fallback.expect("reason").contains(&reason));
        }
    }
}

/// Outside a GPU scope the network's `dot` is ndarray's product bit for bit, transposed views included.
#[test]
fn dot_outside_a_gpu_scope_is_ndarrays_product() {
    let a = Array2::from_shape_fn((300, 70), |(i, j)| ((i * 7 + j * 3) % 11) as f32 - 5.0);
    let b = Array2::from_shape_fn((70, 20), |(i, j)| ((i + 2 * j) % 5) as f32 * 0.5);
    assert_eq!(crate::nn::products::dot(a.view(), b.view()), a.dot(&b));
    assert_eq!(crate::nn::products::dot(a.t(), a.view()), a.t().dot(&a));
}

/// On a machine with a usable GPU: products and kernel sums there match the CPU's (f32
/// rounding). Skipped (reported) without one.
#[test]
fn gpu_products_match_the_cpu_where_a_gpu_is_found() {
    match probe() {
        Ok(gpu) => println!("{}: {}", gpu.name(), gpu.libraries()),
        Err(reason) => return eprintln!("skipped: {reason}"),
    }
    let a =
        Array2::from_shape_fn((3000, 700), |(i, j)| (((i * 7 + j * 3) % 11) as f32 - 5.0) * 0.1);
    let b = Array2::from_shape_fn((700, 300), |(i, j)| ((i + 2 * j) % 5) as f32 * 0.05);
    for (x, y) in [(a.view(), b.view()), (a.t(), a.view())] {
        let want = x.dot(&y);
        let (got, used) =
            scoped(Device::Cuda, || Ok(crate::nn::products::dot(x, y))).expect("cuda");
        assert_eq!(used.kind, "cuda");
        let scale = want.iter().fold(0f32, |m, v| m.max(v.abs())).max(1.0);
        let worst = (&got - &want).iter().fold(0f32, |m, v| m.max(v.abs())) / scale;
        assert!(worst < 1e-4, "relative error {worst}");
    }
}

/// A request of [`kernel_sums_match_the_cpu`]: rows of each domain, and its labels and
/// objectives.
#[derive(Clone, Copy)]
struct SumsCase {
    ns: usize,
    nt: usize,
    labels: Labels,
    /// J_TU's shape (a diagonal Γ on (0, 0), (1, 1) and (0, 1), no S block asked for in full)
    /// beside a dense Γ on (0, 0) (J_DU on the source rows); else dense Γs with every S block.
    tu_like: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Labels {
    Soft,
    /// Row i in class i mod c.
    OneHot,
    /// As `OneHot`, with every seventh row in no class (a zero label row).
    OneHotSomeNone,
}

/// The exact kernel sums of `device` (S blocks, objective values, gradients) match the CPU's
/// tiled pass on each case. S is compared where a block is asked for in full or an objective
/// weighs the entry (elsewhere either pass may leave it at 0).
fn kernel_sums_match_the_cpu(
    cases: &[SumsCase],
    device: impl Fn(&crate::kernel::tiled::Request<f32>) -> crate::kernel::tiled::request::Output<f32>,
) {
    use crate::kernel::tiled::{run, Domain, Objective, Request};
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let (d, c) = (37, 4);
    for &SumsCase { ns, nt, labels, tu_like } in cases {
        let z = |n: usize, rng: &mut rand_chacha::ChaCha8Rng| {
            Array2::from_shape_fn((n, d), |_| rng.random::<f32>() * 2.0)
        };
        let y = |n: usize, rng: &mut rand_chacha::ChaCha8Rng| {
            Array2::from_shape_fn((n, c), |(i, k)| match labels {
                Labels::Soft => rng.random::<f32>(),
                Labels::OneHot => (i % c == k) as u8 as f32,
                Labels::OneHotSomeNone => (i % 7 != 6 && i % c == k) as u8 as f32,
            })
        };
        let (zs, zt, ys, yt) = (z(ns, &mut rng), z(nt, &mut rng), y(ns, &mut rng), y(nt, &mut rng));
        let gamma = |rng: &mut rand_chacha::ChaCha8Rng| {
            Array2::from_shape_fn((c, c), |_| rng.random::<f64>() - 0.5)
        };
        let diagonal = |rng: &mut rand_chacha::ChaCha8Rng| {
            Array2::from_diag(&ndarray::Array1::from_shape_fn(c, |_| rng.random::<f64>()))
        };
        let domains =
            [Domain { z: zs.view(), y: ys.view() }, Domain { z: zt.view(), y: yt.view() }];
        let (s_blocks, objectives) = if tu_like {
            let tu = vec![
                (0, 0, diagonal(&mut rng)),
                (1, 1, diagonal(&mut rng)),
                (0, 1, diagonal(&mut rng) * -2.0),
            ];
            (
                vec![],
                vec![Objective { terms: tu }, Objective { terms: vec![(0, 0, gamma(&mut rng))] }],
            )
        } else {
            let first = vec![(0, 0, gamma(&mut rng)), (0, 1, gamma(&mut rng))];
            (
                vec![(0, 0), (0, 1), (1, 1)],
                vec![
                    Objective { terms: first },
                    Objective { terms: vec![(1, 1, gamma(&mut rng))] },
                ],
            )
        };
        let req = Request { domains: &domains, s_blocks, objectives, h: 40.0 };
        let (want, got) = (run(&req), device(&req));
        let case = format!("({ns}, {nt}, tu_like {tu_like})");
        for (k, sw) in &want.s {
            let weighed = |i: usize, j: usize| {
                req.s_blocks.contains(k)
                    || req.objectives.iter().flat_map(|o| &o.terms).any(|(a, b, g)| {
                        (*a, *b) == *k && (g[[i, j]] != 0.0 || (a == b && g[[j, i]] != 0.0))
                    })
            };
            let sg = got.s_block(k.0, k.1);
            let scale = sw.iter().fold(0f64, |m, v| m.max(v.abs()));
            let worst = sw
                .indexed_iter()
                .filter(|((i, j), _)| weighed(*i, *j))
                .fold(0f64, |m, ((i, j), v)| m.max((v - sg[[i, j]]).abs()))
                / scale;
            assert!(worst < 1e-4, "{case}: S{k:?}: relative error {worst}");
        }
        for (w, g) in want.values.iter().zip(&got.values) {
            assert!((w - g).abs() <= 1e-4 * w.abs().max(1.0), "{case}: value {w} vs {g}");
        }
        // Relative to each gradient's largest entry, or to 1e-4 of the case's largest where a
        // gradient is rounding noise around an exact 0 (one row alone in its domain).
        let largest = |g: &Array2<f32>| g.iter().fold(0f32, |m, v| m.max(v.abs()));
        let overall = want.grads.iter().flatten().map(largest).fold(0f32, f32::max);
        for (gw, gg) in want.grads.iter().flatten().zip(got.grads.iter().flatten()) {
            assert_eq!(gw.dim(), gg.dim(), "{case}: gradient shape");
            let scale = largest(gw).max(1e-4 * overall).max(1e-12);
            let worst = (gw - gg).iter().fold(0f32, |m, v| m.max(v.abs())) / scale;
            assert!(worst < 1e-3, "{case}: gradient: relative error {worst}");
        }
    }
}

/// Cases of the kernel sums on a device: `(ns, nt, labels, tu_like)`.
fn sums_cases(cases: &[(usize, usize, Labels, bool)]) -> Vec<SumsCase> {
    cases.iter().map(|&(ns, nt, labels, tu_like)| SumsCase { ns, nt, labels, tu_like }).collect()
}

/// On the CPU's emulation of the GPU (the kernels built by the host C compiler, every launch
/// and product checked against its signature and buffer lengths): the GPU's kernel sums with
/// small tiles, so that blocks have several tiles, a partial last one, and mirrored pairs, and
/// domains of one row; one-hot rows sorted by class (rows of no class among them) and, with
/// J_TU's diagonal Γ, tile pairs skipped; and with one tile. Skipped without a C compiler.
#[test]
fn emulated_kernel_sums_match_the_cpu() {
    use Labels::*;
    let Some(kernels) = cuda::kernels_host::build() else { return };
    let small = sums_cases(&[
        (300, 200, OneHot, false),
        (130, 97, Soft, true),
        (1, 65, OneHot, false),
        (65, 1, Soft, false),
        (301, 203, OneHotSomeNone, true),
        (260, 150, OneHot, true),
        (90, 7, OneHotSomeNone, false),
    ]);
    for (tile, cases) in [
        (64, small),
        (4096, sums_cases(&[(90, 70, OneHot, false), (90, 70, OneHotSomeNone, true)])),
    ] {
        kernel_sums_match_the_cpu(&cases, |req| {
            cuda::sums::kernel_sums(&kernels, req, tile, false).expect("emulated kernel sums")
        });
    }
    // With `tf32`, the pass's products run in the TF32 mode, and f32 products are restored
    // after it (the emulation computes in f32 in either mode).
    assert_eq!(kernels.tf32_products.load(std::sync::atomic::Ordering::Relaxed), 0);
    kernel_sums_match_the_cpu(&sums_cases(&[(90, 70, OneHot, true)]), |req| {
        cuda::sums::kernel_sums(&kernels, req, 64, true).expect("emulated kernel sums")
    });
    assert!(
        kernels.tf32_products.load(std::sync::atomic::Ordering::Relaxed) > 0
            && !kernels.tf32.load(std::sync::atomic::Ordering::Relaxed)
    );
}

/// The report names TF32 kernel sums only where they ran.
#[test]
fn the_report_names_tf32_kernel_sums_only_where_they_ran() {
    let used = |tf32_kernel_sums| {
        serde_json::to_string(&DeviceUsed {
            kind: "cuda".into(),
            name: None,
            fallback: None,
            tf32_kernel_sums,
        })
        .unwrap()
    };
    assert!(!used(false).contains("tf32"), "{}", used(false));
    assert!(used(true).contains("\"tf32_kernel_sums\":true"), "{}", used(true));
    let old: DeviceUsed = serde_json::from_str(r#"{"kind": "cpu"}"#).unwrap();
    assert!(!old.tf32_kernel_sums);
}

/// On a machine with a usable GPU: the same there, through the crate's seam. Skipped
/// (reported) without one.
#[test]
fn gpu_kernel_sums_match_the_cpu_where_a_gpu_is_found() {
    if let Err(reason) = probe() {
        eprintln!("skipped: {reason}");
        return;
    }
    use Labels::*;
    let cases = sums_cases(&[
        (300, 200, OneHot, false),
        (5000, 4500, OneHot, false),
        (700, 650, Soft, false),
        (9000, 5000, OneHotSomeNone, true),
        (900, 500, Soft, true),
    ]);
    kernel_sums_match_the_cpu(&cases, |req| {
        let (got, used) =
            scoped(Device::Cuda, || Ok(crate::kernel::tiled::run(req))).expect("cuda");
        assert_eq!(used.kind, "cuda");
        got
    });
}

/// Full-batch training on a device (`training::GpuNet`: forward, backward, AdamW, a snapshot
/// restored) follows the CPU's `HostNet` iteration by iteration to f32 rounding, with
/// BatchNorm on leading rows, dropout, and several activations; pre-training's steps (leading
/// rows) and adaptation's (every row, an extra ∂ℓ/∂Z) alternate.
fn device_training_matches_the_cpu<D: cuda::Backend>(dev: Arc<D>) {
    use crate::nn::{
        weighted_cross_entropy, Activation, Adam, AdamConfig, Forward, Network, NetworkConfig,
    };
    use rand::{Rng, SeedableRng};
    use training::{GpuNet, HostNet, Snapshots, TrainingNet};
    let (n, n_train, d, c) = (3000, 2400, 50, 4);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let x = Array2::from_shape_fn((n, d), |_| rng.random::<f32>() * 2.0 - 1.0);
    let y: Vec<usize> = (0..n_train).map(|i| (i * 7 + (x[[i, 0]] > 0.0) as usize) % c).collect();
    let configs = [
        NetworkConfig { hidden: vec![64, 32], dropout: 0.2, ..Default::default() },
        NetworkConfig {
            hidden: vec![48],
            activation: Activation::Tanh,
            batch_norm: false,
            ..Default::default()
        },
        NetworkConfig {
            hidden: vec![40, 24],
            activation: Activation::Elu,
            activation_on_z: false,
            ..Default::default()
        },
        NetworkConfig {
            hidden: vec![40, 24],
            activation: Activation::LeakyRelu,
            ..Default::default()
        },
    ];
    let rel = |a: &Array2<f32>, b: &Array2<f32>| {
        let scale = b.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
        (a - b).iter().fold(0f32, |m, v| m.max(v.abs())) / scale
    };
    for cfg in &configs {
        let net = Network::new(d, c, cfg, 3).unwrap();
        let adam = Adam::new(&AdamConfig::default(), &net);
        let mut host = HostNet::new(net.clone(), adam.clone());
        let mut dev = GpuNet::upload(dev.clone(), net, adam).expect("upload");
        let (mut rng_h, mut rng_d) =
            (rand_chacha::ChaCha8Rng::seed_from_u64(1), rand_chacha::ChaCha8Rng::seed_from_u64(1));
        let fw = Forward::training(n_train);
        let (mut snap_h, mut snap_d) = (None, None);
        for it in 0..6 {
            host.forward(x.view(), &fw, &mut rng_h, true).unwrap();
            dev.forward(x.view(), &fw, &mut rng_d, true).expect("forward on the device");
            let (lh, ld) = (host.logits().to_owned(), dev.logits().to_owned());
            let worst = rel(&ld, &lh);
            assert!(worst < 1e-3, "{cfg:?} iteration {it}: logits relative difference {worst}");
            let (zh, zd) = (host.z().unwrap().to_owned(), dev.z().expect("Z kept").to_owned());
            assert!(rel(&zd, &zh) < 1e-3, "{cfg:?} iteration {it}: Z");
            let (_, dl) = weighted_cross_entropy(
                lh.slice(ndarray::s![..n_train, ..]),
                &y,
                &vec![1.0; n_train],
            );
            if it % 2 == 0 {
                // Pre-training's step: the leading rows' cross-entropy only.
                assert!(host.step(x.view(), dl.view(), None).unwrap());
                assert!(dev.step(x.view(), dl.view(), None).expect("step on the device"));
            } else {
                // Adaptation's: every row, with an extra ∂ℓ/∂Z from a kernel term.
                let mut dl_all = Array2::<f32>::zeros((n, c));
                dl_all.slice_mut(ndarray::s![..n_train, ..]).assign(&dl);
                let dz = zh.mapv(|v| 1e-4 * v);
                assert!(host.step(x.view(), dl_all.view(), Some(dz.view())).unwrap());
                assert!(dev
                    .step(x.view(), dl_all.view(), Some(dz.view()))
                    .expect("step on the device"));
            }
            if it == 2 {
                (snap_h, snap_d) = (Some(host.snapshot().unwrap()), Some(dev.snapshot().unwrap()));
            }
            let eval = Forward::evaluation(n_train);
            let (eh, ed) = (
                host.logits_of(x.view(), &eval, &mut rng_h).unwrap(),
                dev.logits_of(x.view(), &eval, &mut rng_d).unwrap(),
            );
            assert!(rel(&ed, &eh) < 1e-3, "{cfg:?} iteration {it}: evaluation logits");
        }
        host.restore(snap_h.unwrap());
        dev.restore(snap_d.unwrap());
        let ((nh, ah), (nd, ad)) =
            (Box::new(host).into_host().unwrap(), Box::new(dev).into_host().expect("download"));
        assert_eq!(ah.steps(), ad.steps());
        // A Linear bias before BatchNorm has a zero gradient up to rounding, which AdamW turns
        // into ±lr steps of either sign: those tensors are left out (the logits show they
        // cancel).
        let mut skip = Vec::new();
        let mut at = 0;
        for block in &nh.g.blocks {
            if block.bn.is_some() {
                skip.push(at + 1);
            }
            at += if block.bn.is_some() { 4 } else { 2 };
        }
        // The parameters and first moments of the snapshot (three AdamW steps), per tensor as
        // ‖device − CPU‖ / ‖CPU‖. Any other rounding (the GPU's products and `expf`, or this
        // emulation built with FMA, `GLSHIFT_EMULATE_FMA`) can put a ReLU input that lies
        // within rounding of 0 on its other side: that row's term in its unit's gradient sums
        // changes, about 1/n of a sum over n rows in the norm (4e-4 for one such input here,
        // seen with FMA), while by the largest entry it was 2e-3 of BatchNorm's shift, where
        // AdamW, which divides each component by its own size, makes it a fraction of a step
        // of a tensor that has moved only three. 1e-2 allows several such inputs; a wrong
        // buffer, shape or launch moves a whole tensor by far more. The logits are compared
        // entry by entry, at every iteration, above.
        let norm = |v: &mut dyn Iterator<Item = f32>| v.map(|x| x * x).sum::<f32>().sqrt();
        let (mh, md) = (ah.moments().0, ad.moments().0);
        for (i, ((_, ph), (_, pd))) in
            nh.params().iter().zip(nd.params()).enumerate().filter(|(i, _)| !skip.contains(i))
        {
            for (what, a, b) in [("parameters", *ph, pd), ("first moments", &mh[i][..], &md[i][..])]
            {
                let scale = norm(&mut a.iter().copied()).max(1e-6);
                let diff = norm(&mut a.iter().zip(b).map(|(x, y)| x - y)) / scale;
                assert!(diff < 1e-2, "{cfg:?}: tensor {i}, {what}: relative difference {diff}");
            }
        }
        let eval = Forward::evaluation(n_train);
        let mut rng0 = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let (eh, ed) = (
            HostNet::new(nh, ah).logits_of(x.view(), &eval, &mut rng0).unwrap(),
            HostNet::new(nd, ad).logits_of(x.view(), &eval, &mut rng0).unwrap(),
        );
        assert!(rel(&ed, &eh) < 1e-3, "{cfg:?}: restored networks' logits");
    }
}

/// The same on the CPU's emulation of the GPU (the kernels built by the host C compiler,
/// every launch's arguments checked against the kernel's signature and buffer lengths): the
/// GPU path's buffers, shapes and launches, without a GPU. Skipped without a C compiler.
#[test]
fn emulated_device_training_matches_the_cpu() {
    let Some(kernels) = cuda::kernels_host::build() else { return };
    device_training_matches_the_cpu(Arc::new(kernels));
}

/// On a machine with a usable GPU: the same there. Skipped (reported) without one.
#[test]
fn gpu_full_batch_training_matches_the_cpu_where_a_gpu_is_found() {
    match probe() {
        Ok(gpu) => device_training_matches_the_cpu(gpu),
        Err(reason) => eprintln!("skipped: {reason}"),
    }
}
