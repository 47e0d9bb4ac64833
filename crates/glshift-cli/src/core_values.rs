//! The core's enums as command-line values: the accepted names come from the core (`ALL` and
//! `name` of each enum), so a variant added there is accepted here without a hand edit, and
//! the help of each value is a `match` that fails to compile until it says what the new one
//! does.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use glshift::device::Device;
use glshift::label_shift::IntervalMethod;
use glshift::select::SelectRule;

/// A core enum that the command line takes by name.
pub trait CoreValue: Copy + Send + Sync + 'static {
    /// Every value, in the order `--help` lists them.
    fn all() -> &'static [Self];
    /// The name on the command line (the core's own name for it).
    fn name(self) -> &'static str;
    /// One line for `--help`.
    fn help(self) -> &'static str;
}

/// A clap value parser of `T`'s names, each listed in `--help` with its line.
pub fn parser<T: CoreValue>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::all().iter().map(|v| PossibleValue::new(v.name()).help(v.help())))
        .map(|s| *T::all().iter().find(|v| v.name() == s).expect("clap accepts listed names only"))
}

impl CoreValue for SelectRule {
    fn all() -> &'static [Self] {
        &SelectRule::ALL
    }
    fn name(self) -> &'static str {
        SelectRule::name(self)
    }
    fn help(self) -> &'static str {
        match self {
            SelectRule::Iwcv => "Label-shift IWCV on the source hold-out, one w for all candidates",
            SelectRule::Dev => "Deep embedded validation (domain-classifier weights on Z)",
            SelectRule::DevNormalised => "DEV with the weights divided by their mean",
            SelectRule::Snd => "Soft neighbourhood density of the target predictions",
            SelectRule::Entropy => "Mean entropy of the target predictions (lower is better)",
            SelectRule::Circular => "Circular (reverse) validation accuracy on the source hold-out",
            SelectRule::MeanRank => "Mean rank over iwcv, dev-normalised, snd, entropy, circular",
            SelectRule::SafeEntropy => {
                "Lowest entropy among the candidates whose iwcv is within 0.02 of `source`'s"
            }
        }
    }
}

impl CoreValue for IntervalMethod {
    fn all() -> &'static [Self] {
        &IntervalMethod::ALL
    }
    fn name(self) -> &'static str {
        IntervalMethod::name(self)
    }
    fn help(self) -> &'static str {
        match self {
            IntervalMethod::Basic => "[2θ̂ − q_hi, 2θ̂ − q_lo] ∩ [0, 1]",
            IntervalMethod::Percentile => "[q_lo, q_hi]",
        }
    }
}

impl CoreValue for Device {
    fn all() -> &'static [Self] {
        &Device::ALL
    }
    fn name(self) -> &'static str {
        Device::name(self)
    }
    fn help(self) -> &'static str {
        match self {
            Device::Cpu => "The CPU",
            Device::Cuda => "One CUDA GPU; an error where none can be used",
            Device::Auto => {
                "CUDA where a driver, cuBLAS, NVRTC and a device are found, else the CPU"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every core value round-trips through the parser by its core name, and nothing else parses.
    fn round_trips<T: CoreValue + PartialEq + std::fmt::Debug>() {
        let cmd =
            clap::Command::new("t").arg(clap::Arg::new("v").long("v").value_parser(parser::<T>()));
        for &v in T::all() {
            let m = cmd
                .clone()
                .try_get_matches_from(["t", "--v", v.name()])
                .expect("a core name parses");
            assert_eq!(m.get_one::<T>("v"), Some(&v));
        }
        assert!(cmd.try_get_matches_from(["t", "--v", "no-such-value"]).is_err());
    }

    #[test]
    fn core_names_are_the_command_lines() {
        round_trips::<SelectRule>();
        round_trips::<IntervalMethod>();
        round_trips::<Device>();
    }
}
