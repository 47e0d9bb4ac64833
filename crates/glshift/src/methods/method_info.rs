//! What the training loop, the guard and the docs need to know about a method
//! ([`MethodInfo`]: family, training stage, class weights, citation): the type of a registry
//! row's facts (`kind`), plain data that the settings and the methods read without importing
//! the registry.

/// Which group of methods a method belongs to; the loop's rules follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// No adaptation term (`source`).
    Source,
    /// MUL and its variants: J_TU/J_DU recorded in the history, the prior guard and the
    /// label-free adaptation stop apply, divergence advice names `mul.lambda_*`.
    Mul,
    /// A baseline of `methods::baselines`: a transfer term recorded in the history's `transfer`.
    Baseline,
}

/// The weights a method puts on the source cross-entropy (and its transfer term): per class,
/// or KMM's per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassWeights {
    None,
    /// BBSE-QP's importance weights w (Combes et al. 2020).
    Importance,
    /// PADA's γ, the target's mean prediction normalised to max 1 (Cao et al. 2018).
    Pada,
    /// KMM's β, one weight per source training row from kernel mean matching on the input
    /// features (Huang et al. 2007), not per class.
    KernelMeanMatching,
}

/// What the loop and the docs need to know about a method, from its registry row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodInfo {
    pub family: Family,
    /// Adapts by mini-batch SGD when `baselines.schedule = "paper"` (as its paper trains).
    pub paper_minibatch: bool,
    pub class_weights: ClassWeights,
    /// The paper that defines the method.
    pub citation: &'static str,
}

pub(crate) const fn info(
    family: Family,
    paper_minibatch: bool,
    class_weights: ClassWeights,
    citation: &'static str,
) -> MethodInfo {
    MethodInfo { family, paper_minibatch, class_weights, citation }
}
