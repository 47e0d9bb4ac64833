//! The network's matrix products `C = A·B` (A m×k, B k×n, any non-negative strides; transposed
//! views are fine). On the CPU (ndarray's product) unless a device has installed an
//! accelerator ([`set_accelerator`]: `crate::device::scoped` does so for its GPU scope), which
//! is offered every f32 product and may decline any; a declined product runs on the CPU.
//! The accelerator lives below the network in this way so that the network's layers name no
//! device.

use std::sync::OnceLock;

use ndarray::{Array2, ArrayView2};

use crate::Real;

/// An f32 product `A·B` off the CPU, or `None` to leave it to the CPU.
pub type Accelerator = fn(ArrayView2<f32>, ArrayView2<f32>) -> Option<Array2<f32>>;

static ACCELERATOR: OnceLock<Accelerator> = OnceLock::new();

/// Installs the accelerator of every later product (the first one installed stays).
pub fn set_accelerator(accelerator: Accelerator) {
    let _ = ACCELERATOR.get_or_init(|| accelerator);
}

/// `C = A·B`: through the accelerator for f32 when it takes the product, else ndarray's.
pub fn dot<T: Real>(a: ArrayView2<T>, b: ArrayView2<T>) -> Array2<T> {
    if let Some(accelerate) = ACCELERATOR.get() {
        if let (Some(a32), Some(b32)) = (as_f32(&a), as_f32(&b)) {
            if let Some(c) = accelerate(a32, b32) {
                return from_f32(c);
            }
        }
    }
    a.dot(&b)
}

/// `a` as an f32 view when `T` is f32 and its strides are non-negative.
fn as_f32<'a, T: Real>(a: &ArrayView2<'a, T>) -> Option<ArrayView2<'a, f32>> {
    if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>()
        || a.strides().iter().any(|&s| s < 0)
    {
        return None;
    }
    let strides = (a.strides()[0] as usize, a.strides()[1] as usize);
    use ndarray::ShapeBuilder;
    // SAFETY: T is f32 (checked above), so the pointer, shape and strides describe the same
    // valid f32 elements for the view's lifetime.
    Some(unsafe { ArrayView2::from_shape_ptr(a.dim().strides(strides), a.as_ptr() as *const f32) })
}

fn from_f32<T: Real>(c: Array2<f32>) -> Array2<T> {
    let boxed: Box<dyn std::any::Any> = Box::new(c);
    *boxed.downcast::<Array2<T>>().expect("T is f32: checked by as_f32")
}
