mod stats;
use super::*;
use crate::nn::test_support::{
    assert_grad_close, assert_grad_close_maybe_zero, fd_grad, random_matrix,
};
use crate::nn::weighted_cross_entropy;
use ndarray::s;

const N: usize = 8;
const D_IN: usize = 4;
const C: usize = 3;

/// ℓ = weighted CE(logits) + ⟨R, z⟩ for a random R, so the extra ∂ℓ/∂z path is exercised.
struct Problem {
    x: Array2<f64>,
    r: Array2<f64>,
    labels: Vec<usize>,
    weights: Vec<f64>,
    fw: Forward,
}

impl Problem {
    fn new(z_dim: usize, stats_rows: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Problem {
            x: random_matrix(N, D_IN, &mut rng),
            r: random_matrix(N, z_dim, &mut rng) * 0.5,
            labels: vec![0, 1, 2, 0, 1, 2, 2, 1],
            weights: vec![1.0, 0.5, 2.0, 1.5, 0.0, 1.0, 3.0, 0.7],
            fw: Forward::training(stats_rows),
        }
    }

    /// Dropout masks come from a fresh generator with a fixed seed: the same mask at every call.
    fn loss(&self, net: &Network<f64>) -> f64 {
        let mut rng = ChaCha8Rng::seed_from_u64(1234);
        let pass = net.forward(self.x.view(), &self.fw, &mut rng);
        let (ce, _) = weighted_cross_entropy(pass.logits.view(), &self.labels, &self.weights);
        ce + (&pass.z * &self.r).sum()
    }

    fn check(&self, net: &Network<f64>, what: &str) {
        let mut rng = ChaCha8Rng::seed_from_u64(1234);
        let pass = net.forward(self.x.view(), &self.fw, &mut rng);
        let (_, dl) = weighted_cross_entropy(pass.logits.view(), &self.labels, &self.weights);
        let grads = net.backward(self.x.view(), &pass, dl.view(), Some(self.r.view()));
        let params: Vec<Vec<f64>> = net.params().iter().map(|(_, p)| p.to_vec()).collect();
        let tensors = grads.tensors();
        // Index of each G block's bias in the parameter list, when followed by BatchNorm.
        let mut bias_before_bn = Vec::new();
        let mut k = 0;
        for b in &net.g.blocks {
            if b.bn.is_some() {
                bias_before_bn.push(k + 1);
                k += 4;
            } else {
                k += 2;
            }
        }
        assert_eq!(tensors.len(), params.len());
        for (k, (p, g)) in params.iter().zip(&tensors).enumerate() {
            let num = fd_grad(p, |vals| {
                let mut n = net.clone();
                n.params_mut()[k].1.copy_from_slice(vals);
                self.loss(&n)
            });
            let name = format!("{what}: tensor {k} ({:?})", net.params()[k].0);
            if bias_before_bn.contains(&k) {
                // BatchNorm is invariant to a shift of its input: the preceding bias has zero
                // gradient (the statistics rows shift too).
                assert_grad_close_maybe_zero(g, &num, &name);
                assert!(g.iter().all(|v| v.abs() < 1e-10), "{name}: {g:?}");
            } else {
                assert_grad_close(g, &num, &name);
            }
        }
    }
}

fn net_f64(cfg: &NetworkConfig, seed: u64) -> Network<f64> {
    let mut net = Network::<f64>::new_generic(D_IN, C, cfg, seed).unwrap();
    // Non-zero biases / BN parameters so that every term of the backward matters.
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 1);
    for (kind, p) in net.params_mut() {
        if kind != ParamKind::Weight {
            for v in p.iter_mut() {
                let e: f64 =
                    rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
                *v += 0.3 * e;
            }
        }
    }
    net
}

#[test]
fn network_gradient_without_batchnorm_matches_finite_differences() {
    let cfg = NetworkConfig {
        hidden: vec![6, 5],
        activation: Activation::LeakyRelu,
        ..Default::default()
    };
    let net = net_f64(&cfg, 20);
    Problem::new(5, N, 21).check(&net, "no BN");
}

#[test]
fn network_gradient_with_batchnorm_stats_from_leading_rows_matches_finite_differences() {
    let cfg = NetworkConfig {
        hidden: vec![6, 5],
        activation: Activation::Tanh,
        batch_norm: true,
        activation_on_z: false,
        ..Default::default()
    };
    let net = net_f64(&cfg, 22);
    Problem::new(5, 5, 23).check(&net, "BN 5 of 8");
}

#[test]
fn network_gradient_with_batchnorm_and_dropout_matches_finite_differences() {
    let cfg = NetworkConfig {
        hidden: vec![7, 4],
        activation: Activation::Elu,
        batch_norm: true,
        dropout: 0.3,
        ..Default::default()
    };
    let net = net_f64(&cfg, 24);
    Problem::new(4, 6, 25).check(&net, "BN + dropout");
}

#[test]
fn network_gradient_single_relu_layer_matches_finite_differences() {
    let cfg = NetworkConfig { hidden: vec![5], ..Default::default() };
    let net = net_f64(&cfg, 26);
    Problem::new(5, N, 27).check(&net, "relu");
}

#[test]
fn d_z_extra_is_added_to_the_gradient_through_f() {
    let cfg = NetworkConfig { hidden: vec![6, 5], ..Default::default() };
    let net = net_f64(&cfg, 28);
    let p = Problem::new(5, N, 29);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let pass = net.forward(p.x.view(), &p.fw, &mut rng);
    let zero = Array2::<f64>::zeros((N, C));
    let only_extra = net.backward(p.x.view(), &pass, zero.view(), Some(p.r.view()));
    let none = net.backward(p.x.view(), &pass, zero.view(), None);
    assert_eq!(none.global_norm(), 0.0);
    assert!(only_extra.global_norm() > 0.0);
    // F does not see Z's extra gradient.
    assert!(only_extra.f.dw.iter().all(|&v| v == 0.0));
}

#[test]
fn input_gradient_matches_finite_differences_and_parameter_gradients_are_unchanged() {
    for (hidden, dropout) in [(vec![6, 5], 0.0), (vec![5], 0.4)] {
        let cfg =
            NetworkConfig { hidden, dropout, activation: Activation::Tanh, ..Default::default() };
        let net = net_f64(&cfg, 30);
        let p = Problem::new(5, N, 31);
        let ce_at = |x: &Array2<f64>| {
            let mut rng = ChaCha8Rng::seed_from_u64(1234);
            let pass = net.forward(x.view(), &p.fw, &mut rng);
            weighted_cross_entropy(pass.logits.view(), &p.labels, &p.weights).0
        };
        let mut rng = ChaCha8Rng::seed_from_u64(1234);
        let pass = net.forward(p.x.view(), &p.fw, &mut rng);
        let (_, dl) = weighted_cross_entropy(pass.logits.view(), &p.labels, &p.weights);
        let (grads, dx) = net.backward_with_input(p.x.view(), &pass, dl.view());
        assert_eq!(grads, net.backward(p.x.view(), &pass, dl.view(), None));
        let num = fd_grad(p.x.as_slice().unwrap(), |v| {
            ce_at(&Array2::from_shape_vec((N, D_IN), v.to_vec()).unwrap())
        });
        assert_grad_close(dx.as_slice().unwrap(), &num, "dx");
    }
}

#[test]
fn same_seed_gives_identical_init_and_forward_different_seeds_differ() {
    let cfg =
        NetworkConfig { hidden: vec![16, 8], dropout: 0.2, batch_norm: true, ..Default::default() };
    let a = Network::new(10, 3, &cfg, 42).unwrap();
    let b = Network::new(10, 3, &cfg, 42).unwrap();
    let c = Network::new(10, 3, &cfg, 43).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.g.blocks[0].linear.w, c.g.blocks[0].linear.w);
    assert_ne!(a.f.w, c.f.w);

    let x = random_matrix(12, 10, &mut ChaCha8Rng::seed_from_u64(1)).mapv(|v| v as f32);
    let fw = Forward::training(9);
    let pa = a.forward(x.view(), &fw, &mut ChaCha8Rng::seed_from_u64(5));
    let pb = b.forward(x.view(), &fw, &mut ChaCha8Rng::seed_from_u64(5));
    let pc = c.forward(x.view(), &fw, &mut ChaCha8Rng::seed_from_u64(5));
    assert_eq!(pa.z, pb.z);
    assert_eq!(pa.logits, pb.logits);
    assert_ne!(pa.logits, pc.logits);
}

#[test]
fn f32_and_f64_networks_from_the_same_seed_agree() {
    let cfg = NetworkConfig { hidden: vec![6, 4], ..Default::default() };
    let a = Network::new(5, 3, &cfg, 7).unwrap();
    let b = Network::<f64>::new_generic(5, 3, &cfg, 7).unwrap();
    for ((_, pa), (_, pb)) in a.params().iter().zip(b.params()) {
        for (&va, &vb) in pa.iter().zip(pb) {
            assert!((va as f64 - vb).abs() <= 1e-6 * vb.abs().max(1.0));
        }
    }
}

#[test]
fn init_scale_is_he_for_relu_and_xavier_for_tanh() {
    let std_of = |act: Activation| {
        let cfg = NetworkConfig { hidden: vec![400], activation: act, ..Default::default() };
        let net = Network::new(300, 2, &cfg, 3).unwrap();
        let w = &net.g.blocks[0].linear.w;
        (w.mapv(|v| (v as f64).powi(2)).mean().unwrap()).sqrt()
    };
    let he = (2.0f64 / 300.0).sqrt();
    let xavier = (2.0f64 / 700.0).sqrt();
    assert!((std_of(Activation::Relu) / he - 1.0).abs() < 0.02);
    assert!((std_of(Activation::Tanh) / xavier - 1.0).abs() < 0.02);
}

#[test]
fn eval_mode_has_no_dropout() {
    let cfg = NetworkConfig { hidden: vec![16, 8], dropout: 0.5, ..Default::default() };
    let net = Network::new(6, 3, &cfg, 1).unwrap();
    let x = random_matrix(10, 6, &mut ChaCha8Rng::seed_from_u64(2)).mapv(|v| v as f32);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let e1 = net.forward(x.view(), &Forward::evaluation(10), &mut rng);
    let e2 = net.forward(x.view(), &Forward::evaluation(10), &mut rng);
    assert_eq!(e1.logits, e2.logits);
    // Training mode with the generator advanced does differ (dropout is active there).
    let t1 = net.forward(x.view(), &Forward::training(10), &mut rng);
    let t2 = net.forward(x.view(), &Forward::training(10), &mut rng);
    assert_ne!(t1.logits, t2.logits);
    assert_ne!(t1.logits, e1.logits);
    // predict_proba is the eval forward.
    let p = net.predict_proba(x.view(), None);
    let expected = softmax(e1.logits.view());
    assert!(p.iter().zip(&expected).all(|(a, b)| (a - b).abs() < 1e-6));
}

#[test]
fn batchnorm_uses_statistics_of_the_stats_rows_only() {
    let cfg = NetworkConfig { hidden: vec![12, 6], batch_norm: true, ..Default::default() };
    let net = Network::<f64>::new_generic(5, 3, &cfg, 4).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let xs = random_matrix(9, 5, &mut rng);
    let xt = random_matrix(4, 5, &mut rng).mapv(|v| 3.0 * v + 2.0); // shifted "target"
    let both = stack_rows(xs.view(), xt.view());

    for train in [false, true] {
        let fw = |m| Forward { train, stats_rows: m };
        let alone = net.forward(xs.view(), &fw(9), &mut rng);
        let joint = net.forward(both.view(), &fw(9), &mut rng);
        let head = joint.logits.slice(s![..9, ..]);
        assert!(alone.logits.iter().zip(head).all(|(a, b)| (a - b).abs() < 1e-12), "train={train}");
        // Statistics over all rows do change the source rows' outputs.
        let pooled = net.forward(both.view(), &fw(13), &mut rng);
        let pooled_head = pooled.logits.slice(s![..9, ..]);
        assert!(alone.logits.iter().zip(pooled_head).any(|(a, b)| (a - b).abs() > 1e-3));
    }

    // predict_proba with stats_x = source gives the target rows of the joint eval forward.
    let joint = net.forward(both.view(), &Forward::evaluation(9), &mut rng);
    let expected = softmax(joint.logits.slice(s![9.., ..]));
    let p = net.predict_proba(xt.view(), Some(xs.view()));
    assert!(p.iter().zip(&expected).all(|(a, b)| (a - b).abs() < 1e-12));
    let (z, _) = net.eval_outputs(xt.view(), Some(xs.view()));
    assert!(z.iter().zip(joint.z.slice(s![9.., ..])).all(|(a, b)| (a - b).abs() < 1e-12));
    // Without stats_x, the target is normalised with its own statistics: different.
    let own = net.predict_proba(xt.view(), None);
    assert!(own.iter().zip(&p).any(|(a, b)| (a - b).abs() > 1e-3));
}

#[test]
fn eval_outputs_match_forward_when_bn_is_only_in_early_blocks() {
    // Exercise the path where statistics rows stop being propagated after the last BN block.
    let cfg = NetworkConfig { hidden: vec![7, 5, 4], batch_norm: true, ..Default::default() };
    let mut net = Network::<f64>::new_generic(3, 2, &cfg, 9).unwrap();
    net.g.blocks[2].bn = None;
    net.g.blocks[0].bn = None;
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let xs = random_matrix(6, 3, &mut rng);
    let xt = random_matrix(3, 3, &mut rng);
    let both = stack_rows(xs.view(), xt.view());
    let joint = net.forward(both.view(), &Forward::evaluation(6), &mut rng);
    let (z, logits) = net.eval_outputs(xt.view(), Some(xs.view()));
    assert!(z.iter().zip(joint.z.slice(s![6.., ..])).all(|(a, b)| (a - b).abs() < 1e-12));
    assert!(logits.iter().zip(joint.logits.slice(s![6.., ..])).all(|(a, b)| (a - b).abs() < 1e-12));
}

#[test]
fn network_config_validation_rejects_bad_values() {
    assert!(NetworkConfig::default().validate().is_ok());
    let bad = [
        NetworkConfig { hidden: vec![], ..Default::default() },
        NetworkConfig { hidden: vec![8, 0], ..Default::default() },
        NetworkConfig { dropout: 1.0, ..Default::default() },
        NetworkConfig { dropout: -0.1, ..Default::default() },
        NetworkConfig { dropout: f32::NAN, ..Default::default() },
    ];
    for cfg in bad {
        assert!(cfg.validate().is_err(), "{cfg:?} accepted");
        assert!(Network::new(4, 2, &cfg, 0).is_err());
    }
    let ok = NetworkConfig::default();
    assert!(matches!(Network::new(0, 2, &ok, 0), Err(Error::Param { name: "input_dim", .. })));
    assert!(matches!(Network::new(4, 1, &ok, 0), Err(Error::Param { name: "n_classes", .. })));
}

#[test]
fn network_config_serde_defaults_and_unknown_fields() {
    let cfg: NetworkConfig = toml::from_str("hidden = [64]\nactivation = \"leaky-relu\"").unwrap();
    assert_eq!(
        cfg,
        NetworkConfig { hidden: vec![64], activation: Activation::LeakyRelu, ..Default::default() }
    );
    let d = NetworkConfig::default();
    assert_eq!(
        (d.hidden.clone(), d.activation, d.dropout, d.batch_norm, d.activation_on_z),
        (vec![512, 256], Activation::Relu, 0.0, true, true)
    );
    assert!(toml::from_str::<NetworkConfig>("hiden = [64]").is_err());
}

#[test]
fn n_params_counts_weights_biases_and_bn() {
    let cfg = NetworkConfig { hidden: vec![4, 3], batch_norm: true, ..Default::default() };
    let net = Network::new(10, 2, &cfg, 0).unwrap();
    // (10·4 + 4 + 2·4) + (4·3 + 3 + 2·3) + (3·2 + 2)
    assert_eq!(net.n_params(), 52 + 21 + 8);
    assert_eq!((net.input_dim(), net.z_dim(), net.n_classes()), (10, 3, 2));
    let cfg = NetworkConfig { batch_norm: false, ..cfg };
    assert_eq!(Network::new(10, 2, &cfg, 0).unwrap().n_params(), 44 + 15 + 8);
}

#[test]
fn grads_norm_and_finiteness() {
    let cfg = NetworkConfig { hidden: vec![3], ..Default::default() };
    let net = Network::new(2, 2, &cfg, 0).unwrap();
    let x = Array2::<f32>::ones((2, 2));
    let pass = net.forward(x.view(), &Forward::training(2), &mut ChaCha8Rng::seed_from_u64(0));
    let mut g = net.backward(x.view(), &pass, Array2::zeros((2, 2)).view(), None);
    for t in g.tensors_mut() {
        t.iter_mut().for_each(|v| *v = 2.0);
    }
    let count = net.n_params() as f64;
    assert!((g.global_norm() - (4.0 * count).sqrt()).abs() < 1e-9);
    assert!(g.is_finite());
    g.scale(0.5);
    assert!((g.global_norm() - count.sqrt()).abs() < 1e-9);
    g.f.db[1] = f32::NAN;
    assert!(!g.is_finite());
}

#[test]
fn network_serde_round_trip() {
    let cfg = NetworkConfig { hidden: vec![4], batch_norm: true, ..Default::default() };
    let net = Network::new(3, 2, &cfg, 1).unwrap();
    let json = serde_json::to_string(&net).unwrap();
    let back: Network = serde_json::from_str(&json).unwrap();
    assert_eq!(net, back);
}

/// Timing smoke test at Office-Home-like size; run with `--ignored --nocapture`.
#[test]
#[ignore]
fn forward_backward_timing_2500x1280() {
    let cfg = NetworkConfig {
        hidden: vec![512, 256],
        batch_norm: true,
        dropout: 0.1,
        ..Default::default()
    };
    let net = Network::new(1280, 65, &cfg, 0).unwrap();
    let x = random_matrix(2500, 1280, &mut ChaCha8Rng::seed_from_u64(0)).mapv(|v| v as f32);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let fw = Forward::training(1500);
    let _ = net.forward(x.view(), &fw, &mut rng);
    let reps = 10;
    let t0 = std::time::Instant::now();
    let mut pass = None;
    for _ in 0..reps {
        pass = Some(net.forward(x.view(), &fw, &mut rng));
    }
    let tf = t0.elapsed().as_secs_f64() / reps as f64;
    let pass = pass.unwrap();
    let dl = Array2::<f32>::from_elem(pass.logits.dim(), 1e-3);
    let t0 = std::time::Instant::now();
    for _ in 0..reps {
        let g = net.backward(x.view(), &pass, dl.view(), Some(pass.z.view()));
        assert!(g.is_finite());
    }
    let tb = t0.elapsed().as_secs_f64() / reps as f64;
    let t0 = std::time::Instant::now();
    let _ = net.predict_proba(x.slice(s![1500.., ..]), Some(x.slice(s![..1500, ..])));
    let tp = t0.elapsed().as_secs_f64();
    println!(
        "forward {:.1} ms, backward {:.1} ms, predict_proba {:.1} ms",
        tf * 1e3,
        tb * 1e3,
        tp * 1e3
    );
}

/// Pre-training's backward on the training rows only equals, bit for bit, the full backward
/// whose hold-out rows (after them) carry a zero gradient: f32, BatchNorm, dropout, and more
/// rows than one GEMM depth block, so the blocked sums are exercised.
#[test]
fn backward_on_the_leading_rows_equals_the_full_backward_with_zero_rows_bit_for_bit() {
    let (n, r, d_in, c) = (700, 560, 40, 5);
    for dropout in [0.0f32, 0.2] {
        let cfg = NetworkConfig { hidden: vec![32, 16], dropout, ..Default::default() };
        let net = Network::<f32>::new_generic(d_in, c, &cfg, 3).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let x = random_matrix(n, d_in, &mut rng).mapv(|v| v as f32);
        let labels: Vec<usize> = (0..r).map(|i| (i * 7) % c).collect();
        let pass = net.forward(x.view(), &Forward::training(r), &mut rng);
        let (_, d_train) =
            weighted_cross_entropy(pass.logits.slice(s![..r, ..]), &labels, &vec![1.0f32; r]);
        let mut d_full = Array2::<f32>::zeros((n, c));
        d_full.slice_mut(s![..r, ..]).assign(&d_train);
        let full = net.backward(x.view(), &pass, d_full.view(), None);
        let leading = net.backward_leading(x.view(), &pass, d_train.view());
        let (a, b) = (full.tensors(), leading.tensors());
        assert_eq!(a.len(), b.len());
        for (k, (ta, tb)) in a.iter().zip(&b).enumerate() {
            assert!(ta.iter().any(|&v| v != 0.0), "tensor {k} is all zero");
            let same = ta.iter().zip(tb.iter()).all(|(u, v)| u.to_bits() == v.to_bits());
            assert!(same, "tensor {k} differs (dropout {dropout})");
        }
    }
}

#[test]
#[should_panic(expected = "BatchNorm::backward")]
fn backward_on_fewer_rows_than_the_batchnorm_statistics_is_refused() {
    let net = Network::<f64>::new_generic(
        D_IN,
        C,
        &NetworkConfig { hidden: vec![6], ..Default::default() },
        1,
    )
    .unwrap();
    let p = Problem::new(6, N, 2);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let pass = net.forward(p.x.view(), &p.fw, &mut rng);
    net.backward_leading(p.x.view(), &pass, Array2::<f64>::zeros((N - 1, C)).view());
}

/// The pass keeps no copy of its input: a backward given another array than the one the forward
/// read (here an equal copy) is refused rather than trusted.
#[test]
#[should_panic(expected = "not the array the forward pass read")]
fn backward_refuses_an_input_other_than_the_forwards() {
    let net = Network::<f64>::new_generic(
        D_IN,
        C,
        &NetworkConfig { hidden: vec![6], ..Default::default() },
        1,
    )
    .unwrap();
    let p = Problem::new(6, N, 2);
    let pass = net.forward(p.x.view(), &p.fw, &mut ChaCha8Rng::seed_from_u64(0));
    let copy = p.x.clone();
    net.backward(copy.view(), &pass, Array2::<f64>::zeros((N, C)).view(), None);
}
