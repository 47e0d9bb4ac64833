//! Moving a prior toward the source's and into a box: the guard's lighter responses.

/// `pˢ + λ(p − pˢ)` (a prior again when p and pˢ are, for λ in [0, 1]).
pub fn shrink_towards(p: &[f64], source_prior: &[f64], lambda: f64) -> Vec<f64> {
    p.iter().zip(source_prior).map(|(&x, &s)| s + lambda * (x - s)).collect()
}

/// Euclidean projection of `x` onto {p : low ≤ p ≤ high, Σp = 1}: `p_k = clamp(x_k − τ, low_k,
/// high_k)` with τ found by bisection. Returns `x` unchanged when the set is empty
/// (Σlow > 1 or Σhigh < 1) or the lengths differ.
pub fn project_to_box(x: &[f64], low: &[f64], high: &[f64]) -> Vec<f64> {
    let (sl, sh): (f64, f64) = (low.iter().sum(), high.iter().sum());
    if x.len() != low.len() || x.len() != high.len() || sl > 1.0 + 1e-12 || sh < 1.0 - 1e-12 {
        return x.to_vec();
    }
    let at =
        |t: f64| -> Vec<f64> { (0..x.len()).map(|k| (x[k] - t).clamp(low[k], high[k])).collect() };
    let sum = |t: f64| at(t).iter().sum::<f64>();
    // Σ clamp(x − τ) falls from Σhigh to Σlow as τ grows.
    let spread = x.iter().chain(low).chain(high).fold(0.0f64, |m, v| m.max(v.abs())) + 1.0;
    let (mut lo, mut hi) = (-spread, spread);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if sum(mid) > 1.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let p = at(0.5 * (lo + hi));
    let s: f64 = p.iter().sum();
    p.iter().map(|v| v / s).collect()
}
