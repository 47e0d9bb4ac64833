//! A fit's settings resolved once, the same way for the command line and Python: the
//! defaults, then a TOML file (`--config`, `config_path=`) or a JSON object of partial
//! settings (`config_json=`, the TOML file's keys), then the explicit values (`--seed`,
//! `--method`, `--device`, keyword arguments), then validation.

use std::path::Path;

use super::FitConfig;
use crate::device::Device;
use crate::methods::MethodKind;
use crate::{Error, Result};

/// The settings under the explicit values.
#[derive(Clone, Copy, Debug, Default)]
pub enum ConfigSource<'a> {
    /// The defaults alone.
    #[default]
    Defaults,
    /// A TOML file of (partial) settings over the defaults; unknown keys are errors.
    TomlFile(&'a Path),
    /// A JSON object of (partial) settings over the defaults, the TOML file's keys.
    Json(&'a str),
}

/// Values given explicitly, each over the source's (`None` keeps it).
#[derive(Clone, Copy, Debug, Default)]
pub struct ConfigOverrides<'a> {
    /// A registered method name (`mul`, `source`, `dann`, …).
    pub method: Option<&'a str>,
    pub seed: Option<u64>,
    pub pretrain_iters: Option<usize>,
    pub adapt_iters: Option<usize>,
    pub device: Option<Device>,
}

impl FitConfig {
    /// The defaults, then `source`, then `overrides`; validated before any data is read.
    pub fn resolve(source: ConfigSource<'_>, overrides: ConfigOverrides<'_>) -> Result<FitConfig> {
        let mut cfg = match source {
            ConfigSource::Defaults => FitConfig::default(),
            ConfigSource::TomlFile(path) => FitConfig::from_toml_file(path)?,
            ConfigSource::Json(text) => serde_json::from_str::<FitConfig>(text)
                .map_err(|e| Error::param("config", text, format!("invalid settings: {e}")))?,
        };
        if let Some(m) = overrides.method {
            cfg.method = m.parse::<MethodKind>()?;
        }
        if let Some(s) = overrides.seed {
            cfg.seed = s;
        }
        if let Some(n) = overrides.pretrain_iters {
            cfg.pretrain_iters = n;
        }
        if let Some(n) = overrides.adapt_iters {
            cfg.adapt_iters = n;
        }
        if let Some(d) = overrides.device {
            cfg.device = d;
        }
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_values_win_over_the_source_and_bad_values_are_errors() {
        let json = r#"{"seed": 7, "adapt_iters": 12, "method": "source"}"#;
        let from_json =
            FitConfig::resolve(ConfigSource::Json(json), ConfigOverrides::default()).unwrap();
        assert_eq!(
            (from_json.seed, from_json.adapt_iters, from_json.method),
            (7, 12, MethodKind::Source)
        );
        let over = ConfigOverrides {
            method: Some("mul"),
            seed: Some(3),
            device: Some(Device::Cpu),
            ..Default::default()
        };
        let cfg = FitConfig::resolve(ConfigSource::Json(json), over).unwrap();
        assert_eq!(
            (cfg.seed, cfg.adapt_iters, cfg.method, cfg.device),
            (3, 12, MethodKind::Mul, Device::Cpu)
        );
        assert_eq!(
            FitConfig::resolve(ConfigSource::Defaults, ConfigOverrides::default()).unwrap(),
            FitConfig::default()
        );
        assert!(FitConfig::resolve(
            ConfigSource::Json("{\"nope\": 1}"),
            ConfigOverrides::default()
        )
        .is_err());
        let bad = ConfigOverrides { method: Some("not-a-method"), ..Default::default() };
        assert!(FitConfig::resolve(ConfigSource::Defaults, bad).is_err());
        let missing = std::path::Path::new("/nonexistent/glshift.toml");
        assert!(FitConfig::resolve(ConfigSource::TomlFile(missing), ConfigOverrides::default())
            .is_err());
    }
}
