//! Fully connected layer `y = x·W + b`.

use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

use crate::Real;

/// Dense layer. `w` is stored `in × out` so that the forward pass is one GEMM `x·W` without a
/// transpose; `b` has length `out`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Linear<T> {
    /// Weights, `in × out`.
    pub w: Array2<T>,
    /// Bias, `out`.
    pub b: Array1<T>,
}

/// Gradients of a [`Linear`] layer, same shapes as its parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearGrad<T> {
    /// ∂ℓ/∂W, `in × out`.
    pub dw: Array2<T>,
    /// ∂ℓ/∂b, `out`.
    pub db: Array1<T>,
}

impl<T: Real> Linear<T> {
    /// Weights drawn i.i.d. from N(0, std²), bias zero. Values are drawn in f64 and rounded, so
    /// an f32 and an f64 layer from the same generator state agree up to rounding.
    pub fn init_normal<R: Rng + ?Sized>(
        fan_in: usize,
        fan_out: usize,
        std: f64,
        rng: &mut R,
    ) -> Self {
        let normal = Normal::new(0.0, std).expect("finite, non-negative std");
        let w =
            Array2::from_shape_simple_fn((fan_in, fan_out), || T::from_f64_(normal.sample(rng)));
        Linear { w, b: Array1::zeros(fan_out) }
    }

    /// Input width.
    pub fn in_dim(&self) -> usize {
        self.w.nrows()
    }

    /// Output width.
    pub fn out_dim(&self) -> usize {
        self.w.ncols()
    }

    /// `x` (`n × in`) ↦ `x·W + b` (`n × out`).
    pub fn forward(&self, x: ArrayView2<T>) -> Array2<T> {
        let mut y = super::products::dot(x, self.w.view());
        y.scaled_add(T::one(), &self.b);
        y
    }

    /// Given the layer input `x` (`n × in`) and `dy = ∂ℓ/∂y` (`n × out`), returns the parameter
    /// gradients and, when `need_dx`, `∂ℓ/∂x = dy·Wᵀ` (`n × in`). Skipping `dx` for the first
    /// layer saves its largest GEMM.
    pub fn backward(
        &self,
        x: ArrayView2<T>,
        dy: ArrayView2<T>,
        need_dx: bool,
    ) -> (LinearGrad<T>, Option<Array2<T>>) {
        let dw = super::products::dot(x.t(), dy);
        let db = dy.sum_axis(Axis(0));
        let dx = need_dx.then(|| super::products::dot(dy, self.w.t()));
        (LinearGrad { dw, db }, dx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::test_support::{assert_grad_close, fd_grad, random_matrix};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn linear_gradients_match_finite_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut lin = Linear::<f64>::init_normal(4, 3, 0.7, &mut rng);
        lin.b = Array1::from(vec![0.1, -0.2, 0.3]);
        let x = random_matrix(6, 4, &mut rng);
        let r = random_matrix(6, 3, &mut rng); // loss = Σ R ∘ y
        let loss = |l: &Linear<f64>, x: &Array2<f64>| (&l.forward(x.view()) * &r).sum();

        let (g, dx) = lin.backward(x.view(), r.view(), true);
        let dx = dx.unwrap();

        let num_w = fd_grad(lin.w.as_slice().unwrap(), |vals| {
            let mut l = lin.clone();
            l.w.as_slice_mut().unwrap().copy_from_slice(vals);
            loss(&l, &x)
        });
        assert_grad_close(g.dw.as_slice().unwrap(), &num_w, "dW");
        let num_b = fd_grad(lin.b.as_slice().unwrap(), |vals| {
            let mut l = lin.clone();
            l.b.as_slice_mut().unwrap().copy_from_slice(vals);
            loss(&l, &x)
        });
        assert_grad_close(g.db.as_slice().unwrap(), &num_b, "db");
        let num_x = fd_grad(x.as_slice().unwrap(), |vals| {
            let xx = Array2::from_shape_vec(x.raw_dim(), vals.to_vec()).unwrap();
            loss(&lin, &xx)
        });
        assert_grad_close(dx.as_slice().unwrap(), &num_x, "dx");
    }

    /// C = A·B as matrixmultiply's sgemm sums it, whatever its kernel (AVX2, AVX-512, scalar)
    /// or thread count: per element, one FMA chain from zero over each block of 256 values of k
    /// (`S_KC`), the blocks' sums added to C in order.
    fn blocked_fma_reference(a: &Array2<f32>, b: &Array2<f32>) -> Array2<f32> {
        const KC: usize = 256;
        Array2::from_shape_fn((a.nrows(), b.ncols()), |(i, j)| {
            let mut c = 0.0f32;
            for (block, k0) in (0..a.ncols()).step_by(KC).enumerate() {
                let acc = (k0..(k0 + KC).min(a.ncols()))
                    .fold(0.0f32, |acc, k| a[[i, k]].mul_add(b[[k, j]], acc));
                c = if block == 0 { acc } else { c + acc };
            }
            c
        })
    }

    /// The training's bits do not depend on which GEMM kernel the CPU selects (the `avx512`
    /// feature of matrixmultiply, Cargo.toml): every product the network takes, forward and
    /// backward (transposed views included), equals the blocked FMA order bit for bit, on shapes
    /// with edge tiles and several k-blocks.
    #[test]
    fn gemm_sums_in_the_blocked_fma_order_bit_for_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for &(m, k, n) in &[(72, 2560, 37), (5, 300, 1024), (33, 513, 19), (1, 7, 3)] {
            let a = random_matrix(m, k, &mut rng).mapv(|v: f64| v as f32);
            let b = random_matrix(k, n, &mut rng).mapv(|v: f64| v as f32);
            let want = blocked_fma_reference(&a, &b);
            assert!(
                a.dot(&b).iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()),
                "A·B {m}×{k}×{n}"
            );
            let at = a.t().to_owned();
            let got_t = at.t().dot(&b);
            assert!(
                got_t.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()),
                "Aᵀᵀ·B {m}×{k}×{n}"
            );
        }
    }

    #[test]
    fn linear_backward_skips_dx_when_not_needed() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let lin = Linear::<f32>::init_normal(3, 2, 1.0, &mut rng);
        let x = Array2::<f32>::ones((4, 3));
        let dy = Array2::<f32>::ones((4, 2));
        let (g, dx) = lin.backward(x.view(), dy.view(), false);
        assert!(dx.is_none());
        assert_eq!(g.dw, Array2::from_elem((3, 2), 4.0));
        assert_eq!(g.db, Array1::from_elem(2, 4.0));
    }
}
