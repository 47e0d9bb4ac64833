//! A sum of logarithms with one logarithm in all (MLLS's likelihood).

/// `Σ_i ln x_i` for positive normal `x_i`, with one logarithm in all: each `x = m·2^e`
/// (`m ∈ [1, 2)`, read from its bits) adds `e` to an integer sum and multiplies `m` into a
/// product, which is split the same way every [`LogSum::BLOCK`] terms before it could
/// overflow. Why: a logarithm per row was 15% of a weak VisDA-shaped fit's time (SQUAREM's
/// likelihood checks in the prior guard's bootstrap). The product's rounding is of the order
/// of a sum of logarithms' (a few units in the last place per term).
pub(super) struct LogSum {
    /// Product of the mantissas since the last split (1 when empty).
    mantissas: f64,
    /// Terms in `mantissas`.
    terms: usize,
    /// Sum of the exponents split off.
    exponent: i64,
    /// A term was not a positive normal number.
    bad: bool,
}

impl LogSum {
    /// Terms per split: 512 mantissas below 2 multiply to under 2⁵¹², far from overflow.
    pub(super) const BLOCK: usize = 512;

    /// The empty sum.
    pub(super) fn new() -> LogSum {
        LogSum { mantissas: 1.0, terms: 0, exponent: 0, bad: false }
    }

    /// `x = m·2^e` with `m ∈ [1, 2)`, for a positive normal `x`.
    pub(super) fn split(x: f64) -> (f64, i64) {
        const MANTISSA: u64 = (1 << 52) - 1;
        let bits = x.to_bits();
        let e = ((bits >> 52) & 0x7ff) as i64 - 1023;
        (f64::from_bits((bits & MANTISSA) | (1023 << 52)), e)
    }

    /// Adds `ln x` `times` times: `m^k` and `k·e` in one step for up to a block's remaining
    /// terms, so that a row counted k times costs one term, not k (`times = 1`: the plain
    /// product, bit for bit).
    pub(super) fn add_times(&mut self, x: f64, times: u32) {
        if !(x.is_normal() && x > 0.0) {
            self.bad = true;
            return;
        }
        let (m, e) = Self::split(x);
        let mut left = times as usize;
        while left > 0 {
            // terms < BLOCK here: a full block is split at once (below), leaving 1 term.
            let k = left.min(Self::BLOCK - self.terms);
            self.exponent += e * k as i64;
            self.mantissas *= Self::power(m, k);
            self.terms += k;
            left -= k;
            if self.terms == Self::BLOCK {
                let (m, e) = Self::split(self.mantissas);
                (self.mantissas, self.exponent, self.terms) = (m, self.exponent + e, 1);
            }
        }
    }

    /// `m^k` (`k ≤ BLOCK`): multiplied out inline for the small counts of a bootstrap
    /// resample, where `powi`'s library call cost more than the row's other work.
    pub(super) fn power(m: f64, k: usize) -> f64 {
        match k {
            1 => m,
            2 => m * m,
            3 => m * m * m,
            _ => m.powi(k as i32),
        }
    }

    /// The sum; NaN if a term was not a positive normal number.
    pub(super) fn ln(&self) -> f64 {
        if self.bad {
            return f64::NAN;
        }
        self.mantissas.ln() + self.exponent as f64 * std::f64::consts::LN_2
    }
}
