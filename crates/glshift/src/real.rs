//! The floating-point scalar the numerical code is generic over: `f32` in training,
//! `f64` in the reference tests.

/// A float usable in ndarray products and the kernel code.
pub trait Real:
    ndarray::LinalgScalar
    + ndarray::ScalarOperand
    + num_traits::Float
    + num_traits::FromPrimitive
    + std::fmt::Debug
    + std::fmt::Display
    + std::iter::Sum
    + Send
    + Sync
    + 'static
{
    /// Lossless-enough conversion used for the small c×c algebra done in f64.
    fn to_f64_(self) -> f64;
    fn from_f64_(x: f64) -> Self;
}

impl Real for f32 {
    fn to_f64_(self) -> f64 {
        self as f64
    }
    fn from_f64_(x: f64) -> Self {
        x as f32
    }
}

impl Real for f64 {
    fn to_f64_(self) -> f64 {
        self
    }
    fn from_f64_(x: f64) -> Self {
        x
    }
}
