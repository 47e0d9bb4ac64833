//! The fused tiled kernel sums: every O(n²) quantity of MCMD, J_DU and J_TU in one pass over
//! tiles of the Gaussian kernel matrix, which is never stored.
//!
//! A request names labelled domains (Z_a, Y_a), the blocks S^{ab} = Y_aᵀ K^{ab} Y_b (a ≤ b)
//! wanted, and objectives ℓ_o = Σ_{(a,b)} ⟨Γ_o^{ab}, S^{ab}⟩. Every MUL objective has this form
//! (`mcmd-math.md`: J_TU and J_DU are linear in G = WᵀSW, hence in S, with Γ = W (∂J/∂G) Wᵀ),
//! so one pass gives the values and, because Γ does not depend on S, the gradients as well:
//!
//!   ∂ℓ/∂z_i = −(2/h) Σ_j H_ij (z_i − z_j),  H = (Y_a Γ_eff Y_bᵀ) ∘ K,
//!
//! with Γ_eff = Γ + Γᵀ inside one domain (both orders of a pair) and Γ across domains.
//!
//! Tiles. Rows of every domain are cut into tiles of at most [`TILE`] rows. When every label row
//! is one-hot (or all zero), rows are grouped by class first and a tile holds one class only;
//! then Y_aᵀ K Y_b of a tile pair is one number (the sum of the tile) and H = γ·K with a scalar
//! γ = Γ_eff[k, l], so the gradient products K Z_J and Kᵀ Z_I are shared by all objectives
//! (J_TU and J_DU together cost one pass), and tile pairs whose γ is 0 for every objective are
//! skipped (a diagonal Γ, e.g. J_TU with the linear label kernel, only needs same-class pairs).
//! Otherwise (soft labels) tiles are contiguous row ranges and H is formed per objective.
//!
//! Work per tile pair (I, J), p×q rows: one GEMM Z_I Z_Jᵀ (2pqd), the Gaussian with row and
//! column sums, then K Z_J and Kᵀ Z_I (2pqd each); Z rows are centred on the pooled mean
//! first (K and the gradient are translation invariant, and the expansion
//! ‖a‖² + ‖b‖² − 2⟨a, b⟩ loses less precision near the origin). Within one domain only pairs
//! I ≤ J are visited (half the tiles), the pair (I, J) serving both (I, J) and (J, I).
//! Memory: O(n(d + c)) for inputs and outputs plus per thread O(TILE·(TILE + d)).
//!
//! Parallelism and determinism: tiles are grouped (≤ 4 consecutive tiles) and pairs of groups
//! are processed in rounds of a round-robin tournament ("circle method"): within a round every
//! group occurs in at most one task, so the tasks run in parallel (rayon) while each row's
//! gradient receives its contributions in a fixed order (round, then the task's own order);
//! per-pair parts of S are added in that order after each round. Results are therefore
//! identical for any number of threads.
//!
//! Layout: `request` (what is asked and returned, also what an accelerator is handed),
//! `plan` (tiling and schedule), `pass` (one pass over the schedule), `pair` (the work of one
//! tile pair).

use std::sync::OnceLock;

use crate::Real;

mod pair;
mod pass;
mod plan;
pub(crate) mod request;
#[cfg(test)]
mod tests;

pub(super) use pass::run_plan;
pub(super) use plan::Plan;
pub(crate) use request::{Domain, Objective, Output, Request};

/// Maximum rows of a tile.
pub(super) const TILE: usize = 256;
/// Most tiles per group of the round-robin schedule.
const GROUP: usize = 4;

/// An f32 request's sums off the CPU, or `None` to leave them to the CPU.
pub(crate) type Accelerator = fn(&Request<f32>) -> Option<Output<f32>>;

static ACCELERATOR: OnceLock<Accelerator> = OnceLock::new();

/// Installs the accelerator of every later request (the first one installed stays):
/// `crate::device::scoped` installs its GPU's, which serves requests inside a GPU scope.
pub(crate) fn set_accelerator(accelerator: Accelerator) {
    let _ = ACCELERATOR.get_or_init(|| accelerator);
}

/// The accelerator's output for an f32 request it takes; `None` for any other.
fn accelerated<T: Real>(req: &Request<T>) -> Option<Output<T>> {
    if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
        return None;
    }
    let accelerate = ACCELERATOR.get()?;
    // SAFETY: T is f32 (checked above): the same type behind the reference.
    let req32 = unsafe { &*(req as *const Request<T>).cast::<Request<f32>>() };
    let out = accelerate(req32)?;
    let boxed: Box<dyn std::any::Any> = Box::new(out);
    Some(*boxed.downcast().expect("T is f32"))
}

/// Runs a request on the exact tiled path: through the accelerator where one takes it (a GPU
/// scope's), else on the CPU.
pub(crate) fn run<T: Real>(req: &Request<T>) -> Output<T> {
    if let Some(out) = accelerated(req) {
        return out;
    }
    let plan = Plan::new(req);
    run_plan(req, &plan)
}
