//! The stages on a device, without a GPU. A device that fails in the middle of a stage: the
//! stage is redone on the CPU from its start, and the fit is the CPU's bit for bit (the failing
//! device is the CPU's network reporting a failure at its k-th forward, as a GPU whose driver
//! gave up would). A whole fit on the CPU's emulation of the GPU (`device::cuda`'s kernels built
//! by the host C compiler) agrees with the CPU's.

use std::cell::Cell;
use std::rc::Rc;

use ndarray::{Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::adapt_loop::adapt_with_fallback;
use super::layout::Layout;
use super::pretrain::PretrainState;
use super::pretrain_full::pretrain_on;
use super::records::{FitData, Stage};
use crate::config::FitConfig;
use crate::data::Rows;
use crate::device::training::{HostNet, Snapshots, TrainingNet};
use crate::nn::{Adam, Forward, Network, NetworkConfig};

/// The CPU's network, failing at forward number `fail_at` (counted in `forwards`).
struct Failing {
    inner: HostNet,
    forwards: Rc<Cell<usize>>,
    fail_at: usize,
}

impl TrainingNet for Failing {
    fn forward(
        &mut self,
        x: ArrayView2<f32>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
        with_z: bool,
    ) -> Result<(), String> {
        self.forwards.set(self.forwards.get() + 1);
        if self.forwards.get() == self.fail_at {
            return Err("simulated device failure".into());
        }
        self.inner.forward(x, fw, rng, with_z)
    }
    fn logits(&self) -> ArrayView2<'_, f32> {
        self.inner.logits()
    }
    fn z(&self) -> Option<ArrayView2<'_, f32>> {
        self.inner.z()
    }
    fn logits_of(
        &mut self,
        x: ArrayView2<f32>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
    ) -> Result<Array2<f32>, String> {
        self.inner.logits_of(x, fw, rng)
    }
    fn step(
        &mut self,
        x: ArrayView2<f32>,
        d_logits: ArrayView2<f32>,
        d_z: Option<ArrayView2<f32>>,
    ) -> Result<bool, String> {
        self.inner.step(x, d_logits, d_z)
    }
    fn network(&self) -> Result<Network, String> {
        self.inner.network()
    }
    fn into_host(self: Box<Self>) -> Result<(Network, Adam), String> {
        Box::new(self.inner).into_host()
    }
}

impl Snapshots for Failing {
    type Snapshot = (Network, Adam);
    fn snapshot(&self) -> Result<(Network, Adam), String> {
        self.inner.snapshot()
    }
    fn restore(&mut self, s: (Network, Adam)) {
        self.inner.restore(s)
    }
}

/// Four Gaussian classes in 6 dimensions; the target shifted.
fn blobs(n: usize, shift: f32, rng: &mut ChaCha8Rng) -> (Array2<f32>, Vec<usize>) {
    let y: Vec<usize> = (0..n).map(|i| i % 4).collect();
    let x = Array2::from_shape_fn((n, 6), |(i, j)| {
        (y[i] == j % 4) as u8 as f32 * 2.0 + shift + rng.random::<f32>() - 0.5
    });
    (x, y)
}

fn config() -> FitConfig {
    FitConfig {
        pretrain_iters: 12,
        adapt_iters: 5,
        network: NetworkConfig { hidden: vec![16, 8], ..Default::default() },
        ..Default::default()
    }
}

type NoDevice = fn(Network, Adam) -> Result<HostNet, String>;

/// The share of rows whose most probable class is the same in `a` and `b`.
fn agreement(a: &Array2<f32>, b: &Array2<f32>) -> f64 {
    let same = a
        .rows()
        .into_iter()
        .zip(b.rows())
        .filter(|(x, y)| crate::nn::argmax_row(*x).0 == crate::nn::argmax_row(*y).0)
        .count();
    same as f64 / a.nrows() as f64
}

#[test]
fn a_device_failing_mid_stage_gives_the_cpus_fit_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let ((xs, ys), (xt, _)) = (blobs(160, 0.0, &mut rng), blobs(120, 0.4, &mut rng));
    let data = FitData {
        source_x: Rows::Memory(xs.view()),
        source_y: &ys,
        target_x: Rows::Memory(xt.view()),
        n_classes: 4,
        holdout: None,
    };
    let cfg = config();
    let layout = Layout::new(&data, &cfg).unwrap();
    let failing = |fail_at: usize, forwards: &Rc<Cell<usize>>| {
        let forwards = forwards.clone();
        move |net, adam| {
            Ok::<_, String>(Failing { inner: HostNet::new(net, adam), forwards, fail_at })
        }
    };

    let cpu = pretrain_on(&layout, &cfg, 17, &mut |_| {}, None::<NoDevice>).unwrap();
    let forwards = Rc::new(Cell::new(0));
    let mut restarts = Vec::new();
    let redone =
        pretrain_on(&layout, &cfg, 17, &mut |p| restarts.push(p.done), Some(failing(5, &forwards)))
            .unwrap();
    assert_eq!(forwards.get(), 5, "the device failed at its fifth forward");
    assert!(restarts.windows(2).any(|w| w[1] < w[0]), "the progress restarted: {restarts:?}");
    assert_eq!(redone.net, cpu.net);
    assert_eq!(redone.history, cpu.history);

    let want = adapt_with_fallback(
        &data,
        &layout,
        cpu.clone(),
        &cfg,
        false,
        &mut |_| {},
        None::<NoDevice>,
    )
    .unwrap();
    let forwards = Rc::new(Cell::new(0));
    let got = adapt_with_fallback(
        &data,
        &layout,
        cpu.clone(),
        &cfg,
        false,
        &mut |_| {},
        Some(failing(3, &forwards)),
    )
    .unwrap();
    assert_eq!(forwards.get(), 3, "the device failed at its third forward");
    assert_eq!(got.network, want.network);
    assert_eq!(got.target_probs, want.target_probs);
    assert_eq!(got.history, want.history);
    assert_ne!(got.network, cpu.net, "the adaptation trained");

    // A device that never fails trains as the CPU does, through the same loop.
    let forwards = Rc::new(Cell::new(0));
    let through = adapt_with_fallback(
        &data,
        &layout,
        cpu,
        &cfg,
        false,
        &mut |_| {},
        Some(failing(usize::MAX, &forwards)),
    )
    .unwrap();
    assert!(forwards.get() >= 1);
    assert_eq!(through.network, want.network);
}

/// A whole fit on a device (`on_device` makes its network): pre-training, then MUL's
/// adaptation with its terms on the device's kept Z (`Method::step_resident`), J_DU on the
/// source rows and, with a pooling rule that pools at once, on the confident target rows too;
/// and a partial target (two of the four classes), where J_TU's prior and J_DU's active
/// classes drop classes. Every adaptation iteration's J_TU, J_DU and λ_DU, and the final
/// predictions, agree with the CPU's.
fn a_fit_on_a_device_agrees_with_the_cpus<N: Snapshots + 'static>(
    on_device: impl Fn(Network, Adam) -> Result<N, String> + Copy,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let ((xs, ys), (xt, yt)) = (blobs(200, 0.0, &mut rng), blobs(150, 0.3, &mut rng));
    let partial: Vec<usize> = (0..yt.len()).filter(|&i| yt[i] < 2).collect();
    let xt_partial = xt.select(ndarray::Axis(0), &partial);
    // Pre-trained long enough, and τ low enough, for confident target rows from the start.
    let mut base = FitConfig {
        pretrain_iters: 60,
        network: NetworkConfig { hidden: vec![16, 8], dropout: 0.1, ..Default::default() },
        ..config()
    };
    base.mul.tau = 0.5;
    let mut pooling = FitConfig { adapt_iters: 8, ..base.clone() };
    (pooling.mul.du_window, pooling.mul.du_stable_tol) = (1, f64::INFINITY);
    for (cfg, xt) in [(base, &xt), (pooling.clone(), &xt), (pooling, &xt_partial)] {
        let data = FitData {
            source_x: Rows::Memory(xs.view()),
            source_y: &ys,
            target_x: Rows::Memory(xt.view()),
            n_classes: 4,
            holdout: None,
        };
        let layout = Layout::new(&data, &cfg).unwrap();
        let cpu_pre = pretrain_on(&layout, &cfg, 17, &mut |_| {}, None::<NoDevice>).unwrap();
        crate::device::take_failures();
        let dev_pre = pretrain_on(&layout, &cfg, 17, &mut |_| {}, Some(on_device)).unwrap();
        assert_eq!(dev_pre.history.len(), cpu_pre.history.len());
        for (a, b) in dev_pre.history.iter().zip(&cpu_pre.history) {
            assert!(
                (a.ce - b.ce).abs() <= 1e-4 * b.ce.abs().max(1.0),
                "pre-training CE {} vs {}",
                a.ce,
                b.ce
            );
        }
        let cpu = adapt_with_fallback(
            &data,
            &layout,
            cpu_pre.clone(),
            &cfg,
            false,
            &mut |_| {},
            None::<NoDevice>,
        )
        .unwrap();
        let dev =
            adapt_with_fallback(&data, &layout, cpu_pre, &cfg, false, &mut |_| {}, Some(on_device))
                .unwrap();
        // Both stages ran on the device to the end: none was redone on the CPU.
        assert_eq!(
            crate::device::take_failures(),
            Vec::<String>::new(),
            "a stage fell back to the CPU"
        );
        let agree = agreement(&dev.target_probs, &cpu.target_probs);
        assert!(agree >= 0.98, "target predictions agree on {agree}");
        let worst =
            (&dev.target_probs - &cpu.target_probs).iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(worst < 1e-3, "target probabilities differ by {worst}");
        assert_eq!(dev.history.len(), cpu.history.len());
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * b.abs() + 1e-7;
        for (a, b) in dev.history.iter().zip(&cpu.history) {
            let what = format!("{:?} iteration {}", a.stage, a.iter);
            assert!(
                close(a.j_tu, b.j_tu)
                    && close(a.j_du, b.j_du)
                    && close(a.lambda_du_applied, b.lambda_du_applied),
                "{what}: J_TU {} vs {}, J_DU {} vs {}, λ_DU {} vs {}",
                a.j_tu,
                b.j_tu,
                a.j_du,
                b.j_du,
                a.lambda_du_applied,
                b.lambda_du_applied
            );
            assert_eq!((a.du_pooled, a.n_confident), (b.du_pooled, b.n_confident), "{what}");
        }
        let adapting = cpu.history.iter().filter(|r| r.stage == Stage::Adapt);
        assert!(adapting.clone().any(|r| r.j_tu > 0.0 && r.j_du > 0.0), "the terms ran");
        if cfg.mul.du_window == 1 {
            assert!(adapting.clone().any(|r| r.du_pooled), "J_DU pooled the target rows");
        }
    }
}

/// On the CPU's emulation of the GPU, its kernel sums asked for in TF32 (skipped without a C
/// compiler).
#[test]
fn a_fit_on_the_emulated_gpu_agrees_with_the_cpus() {
    let Some(kernels) = crate::device::cuda_host_kernels() else { return };
    let kernels = std::sync::Arc::new(kernels);
    // With TF32 kernel sums asked for: the resident passes switch the mode on and back off
    // (the emulation computes in f32 either way).
    a_fit_on_a_device_agrees_with_the_cpus(|net, adam| {
        crate::device::training::GpuNet::upload(kernels.clone(), net, adam)
            .map(|g| g.with_tf32_sums(true))
    });
    assert!(
        kernels.tf32_products.load(std::sync::atomic::Ordering::Relaxed) > 0
            && !kernels.tf32.load(std::sync::atomic::Ordering::Relaxed)
    );
}

/// On a machine with a usable GPU: the same there. Skipped (reported) without one.
#[test]
fn a_fit_on_the_gpu_agrees_with_the_cpus_where_a_gpu_is_found() {
    let gpu = match crate::device::probe() {
        Ok(gpu) => gpu,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    a_fit_on_a_device_agrees_with_the_cpus(|net, adam| {
        crate::device::training::GpuNet::upload(gpu.clone(), net, adam)
    });
}

/// Mini-batch pre-training and the memory bank's adaptation on the emulated GPU follow the
/// CPU's (the same batches, losses within rounding), and a device failing in the middle of
/// either gives the CPU's result bit for bit.
#[test]
fn minibatch_training_on_a_device_follows_the_cpus() {
    use crate::config::{MiniBatchConfig, Training};
    use crate::device::training::GpuNet;
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let ((xs, ys), (xt, _)) = (blobs(400, 0.0, &mut rng), blobs(200, 0.3, &mut rng));
    let data = FitData {
        source_x: Rows::Memory(xs.view()),
        source_y: &ys,
        target_x: Rows::Memory(xt.view()),
        n_classes: 4,
        holdout: None,
    };
    let minibatch = MiniBatchConfig {
        batch_size: 64,
        eval_every: 4,
        bn_stats_rows: 128,
        chunk_rows: 100,
        ..Default::default()
    };
    let cfg =
        FitConfig { training: Training::MiniBatch, minibatch, pretrain_iters: 20, ..config() };
    let layout = Layout::new(&data, &cfg).unwrap();
    assert!(layout.is_borrowed(), "a mini-batch layout");
    let cpu = pretrain_on(&layout, &cfg, 20, &mut |_| {}, None::<NoDevice>).unwrap();
    pretraining_redone_after_a_failure_is_the_cpus(&layout, &cfg, &cpu);
    let Some(kernels) = crate::device::cuda_host_kernels() else { return };
    let kernels = std::sync::Arc::new(kernels);
    let emulated_gpu = |net, adam| GpuNet::upload(kernels.clone(), net, adam);
    minibatch_pretraining_on_a_device_follows_the_cpus(&layout, &cfg, &cpu, emulated_gpu);

    // Adaptation with the memory bank: on the emulated GPU as on the CPU; a failing device
    // gives the CPU's fit bit for bit.
    let cfg = FitConfig {
        adapt_iters: 12,
        minibatch: MiniBatchConfig { refresh_every: 5, context_rows: 64, ..cfg.minibatch.clone() },
        ..cfg
    };
    bank_adaptation_on_a_device_follows_the_cpus(&data, &layout, cpu, &cfg, emulated_gpu);
}

/// Pre-training (20 iterations) on a device failing at its 7th forward is redone on the CPU
/// and gives `cpu`, the CPU's own pre-training, bit for bit.
fn pretraining_redone_after_a_failure_is_the_cpus(
    layout: &Layout,
    cfg: &FitConfig,
    cpu: &PretrainState,
) {
    let forwards = Rc::new(Cell::new(0));
    let fwd = forwards.clone();
    let redone = pretrain_on(
        layout,
        cfg,
        20,
        &mut |_| {},
        Some(move |net, adam| {
            Ok::<_, String>(Failing { inner: HostNet::new(net, adam), forwards: fwd, fail_at: 7 })
        }),
    )
    .unwrap();
    assert_eq!(forwards.get(), 7);
    assert_eq!(redone.net, cpu.net);
    assert_eq!(redone.history, cpu.history);
}

/// Mini-batch pre-training (20 iterations) on the network `device` makes stays on it and
/// follows `cpu`, the CPU's: the same records, CE within rounding, the hold-out evaluated at
/// the same iterations (at least twice).
fn minibatch_pretraining_on_a_device_follows_the_cpus<N: Snapshots>(
    layout: &Layout,
    cfg: &FitConfig,
    cpu: &PretrainState,
    device: impl FnOnce(Network, Adam) -> Result<N, String>,
) {
    crate::device::take_failures();
    let dev = pretrain_on(layout, cfg, 20, &mut |_| {}, Some(device)).unwrap();
    assert_eq!(
        crate::device::take_failures(),
        Vec::<String>::new(),
        "pre-training stayed on the device"
    );
    assert_eq!(dev.history.len(), cpu.history.len());
    for (a, b) in dev.history.iter().zip(&cpu.history) {
        assert!(
            (a.ce - b.ce).abs() <= 1e-4 * b.ce.abs().max(1.0),
            "mini-batch CE {} vs {}",
            a.ce,
            b.ce
        );
        assert_eq!(a.holdout.is_some(), b.holdout.is_some());
    }
    assert!(
        cpu.history.iter().filter(|h| h.holdout.is_some()).count() >= 2,
        "the hold-out was evaluated"
    );
}

/// The memory bank's adaptation from `cpu` (the CPU's pre-training): on a device failing at
/// its 4th forward it gives the CPU's network bit for bit; on the network `device` makes it
/// stays there, with the CPU's number of records and target predictions agreeing on ≥ 98%.
fn bank_adaptation_on_a_device_follows_the_cpus<N: TrainingNet + 'static>(
    data: &FitData,
    layout: &Layout,
    cpu: PretrainState,
    cfg: &FitConfig,
    device: impl FnOnce(Network, Adam) -> Result<N, String>,
) {
    let want =
        adapt_with_fallback(data, layout, cpu.clone(), cfg, false, &mut |_| {}, None::<NoDevice>)
            .unwrap();
    let fwd = Rc::new(Cell::new(0));
    let f2 = fwd.clone();
    let failed = adapt_with_fallback(
        data,
        layout,
        cpu.clone(),
        cfg,
        false,
        &mut |_| {},
        Some(move |net, adam| {
            Ok::<_, String>(Failing { inner: HostNet::new(net, adam), forwards: f2, fail_at: 4 })
        }),
    )
    .unwrap();
    assert_eq!(fwd.get(), 4);
    assert_eq!(failed.network, want.network);
    crate::device::take_failures();
    let got =
        adapt_with_fallback(data, layout, cpu, cfg, false, &mut |_| {}, Some(device)).unwrap();
    assert_eq!(
        crate::device::take_failures(),
        Vec::<String>::new(),
        "the bank's adaptation stayed on the device"
    );
    assert_eq!(got.history.len(), want.history.len());
    let agree = agreement(&got.target_probs, &want.target_probs);
    assert!(agree >= 0.98, "target predictions agree on {agree}");
}
