//! Every random stream of a fit, derived from the one seed by one function: `stream_seed(seed,
//! stream) = seed XOR salt(stream)`. One salt per stream keeps the streams apart (a change to
//! how one draws never shifts another) and fixes them whatever the thread count. The salts are
//! the values the streams have always used, so results are unchanged bit for bit.

/// A random stream of a fit (or of a tool around it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Pre-training: network initialisation, hold-out split and dropout.
    Pretrain,
    /// Mini-batch pre-training: the class-stratified batches.
    PretrainBatches,
    /// The papers' mini-batch baselines: their batch sampler.
    BaselineSampler,
    /// The seeded sample of rows whose BatchNorm statistics a mini-batch fit freezes.
    BnStats,
    /// The memory bank's batches and context rows.
    Bank,
    /// The bootstrap interval of the reported target prior.
    PriorInterval,
    /// The prior guard's bootstrap.
    Guard,
    /// The label-shift residual test of a fit's diagnostics.
    Diagnostics,
    /// The row sample of the SND score (`select`).
    SndRows,
    /// DANN's domain discriminator.
    DannDiscriminator,
    /// CDAN's domain discriminator (and, + 1, its random multilinear map).
    CdanDiscriminator,
    /// A discriminator's reference initialisation.
    DiscriminatorInit,
    /// A discriminator's dropout.
    DiscriminatorDropout,
    /// Cross-fitting: which fold model each target row goes to.
    CrossFitTargets,
    /// The rows of the fitted target a model keeps for the batch target test.
    TargetSample,
    /// The batch rows the target test reads (a batch of over 1 000 rows).
    BatchTestRows,
    /// The subset of those read under the pool's effective size.
    TargetTestSubset,
    /// The target test's pseudo-batches.
    TargetTestReplicates,
}

impl Stream {
    fn salt(self) -> u64 {
        match self {
            Stream::Pretrain => 0x9e37_79b9_7f4a_7c15,
            Stream::PretrainBatches => 0xb47c_4000,
            Stream::BaselineSampler => 0xba7c_0000,
            Stream::BnStats => 0x5747_0000,
            Stream::Bank => 0xba4c_0000,
            Stream::PriorInterval => 0x5e_edc1,
            Stream::Guard => 0x9a1d_07e5_3c4b_11f2,
            Stream::Diagnostics => 0x5f37_59df_0a1b_c2d3,
            Stream::SndRows => 0x5_4d,
            Stream::DannDiscriminator => 0xd15c_0000,
            Stream::CdanDiscriminator => 0xcda0_0000,
            Stream::DiscriminatorInit => 0x1a17_d15c,
            Stream::DiscriminatorDropout => 0x5eed_d15c,
            Stream::CrossFitTargets => 0x7a39_c5f1_0b2d_e864,
            Stream::TargetSample => 0x7a72_6765_7473_616d,
            Stream::BatchTestRows => 0x6261_7463_6873_7562,
            Stream::TargetTestSubset => 0x30ba_31b4_39ba_b131,
            Stream::TargetTestReplicates => 0xe8c6_d0e6_eac4_c4c2,
        }
    }
}

/// The seed of `stream` in a fit seeded with `seed`.
pub fn stream_seed(seed: u64, stream: Stream) -> u64 {
    seed ^ stream.salt()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Stream; 18] = [
        Stream::Pretrain,
        Stream::PretrainBatches,
        Stream::BaselineSampler,
        Stream::BnStats,
        Stream::Bank,
        Stream::PriorInterval,
        Stream::Guard,
        Stream::Diagnostics,
        Stream::SndRows,
        Stream::DannDiscriminator,
        Stream::CdanDiscriminator,
        Stream::DiscriminatorInit,
        Stream::DiscriminatorDropout,
        Stream::CrossFitTargets,
        Stream::TargetSample,
        Stream::BatchTestRows,
        Stream::TargetTestSubset,
        Stream::TargetTestReplicates,
    ];

    /// Distinct salts give distinct streams for every seed; the derivation is its own inverse.
    #[test]
    fn every_stream_has_its_own_seed() {
        for seed in [0u64, 1, 42, u64::MAX] {
            let seeds: Vec<u64> = ALL.iter().map(|&s| stream_seed(seed, s)).collect();
            for (i, a) in seeds.iter().enumerate() {
                assert!(seeds[i + 1..].iter().all(|b| a != b), "seed {seed}: {seeds:?}");
                assert_eq!(stream_seed(*a, ALL[i]), seed);
            }
        }
    }
}
