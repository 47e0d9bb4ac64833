//! The grid's tasks: which (source, target) pairs it runs, and each task's domains under its
//! protocol (one source, or under `msda` every other domain pooled).

use glshift::data;
use glshift::pipeline::Sources;

use super::GridSpec;
use crate::protocol::{self, Protocol};
use crate::{Error, Result};

/// The grid's tasks: the `SOURCE:TARGET` entries of the spec, or every ordered pair of domains;
/// under `msda`, each target with its sources as one name, `a+b+…` (every other domain, sorted).
pub fn parse_tasks(spec: &GridSpec) -> Result<Vec<(String, String)>> {
    if spec.setting == Protocol::Msda.name() {
        return leave_one_out_tasks(spec);
    }
    if spec.targets.is_some() {
        return Err(Error::param(
            "targets",
            spec.setting.clone(),
            "--targets is for --setting msda",
        ));
    }
    if let Some(list) = &spec.tasks {
        return list
            .iter()
            .map(|t| match t.split_once(':') {
                Some((s, d)) if !s.is_empty() && !d.is_empty() => {
                    Ok((s.to_string(), d.to_string()))
                }
                _ => Err(Error::BadTask { entry: t.clone() }),
            })
            .collect();
    }
    let domains = data::list_domains(&spec.data)?;
    if domains.len() < 2 {
        return Err(Error::TooFewDomains { dir: spec.data.clone(), found: domains.len() });
    }
    Ok(domains
        .iter()
        .flat_map(|s| domains.iter().filter(move |t| *t != s).map(move |t| (s.clone(), t.clone())))
        .collect())
}

/// `msda`'s tasks: each target of `--targets` (default: every domain, in folder order) with
/// every other domain as its sources.
fn leave_one_out_tasks(spec: &GridSpec) -> Result<Vec<(String, String)>> {
    if spec.tasks.is_some() {
        return Err(Error::param(
            "tasks",
            "msda",
            "msda's tasks are leave-one-domain-out; choose them with --targets",
        ));
    }
    let mut domains = data::list_domains(&spec.data)?;
    domains.sort();
    if domains.len() < 3 {
        return Err(Error::TooFewDomains { dir: spec.data.clone(), found: domains.len() });
    }
    let targets = spec.targets.clone().unwrap_or_else(|| domains.clone());
    targets
        .iter()
        .map(|t| {
            if !domains.contains(t) {
                return Err(Error::param(
                    "targets",
                    t.clone(),
                    format!(
                        "no such domain in {}; found: {}",
                        spec.data.display(),
                        domains.join(", ")
                    ),
                ));
            }
            let sources: Vec<&str> =
                domains.iter().filter(|d| *d != t).map(String::as_str).collect();
            Ok((sources.join(SOURCE_SEPARATOR), t.clone()))
        })
        .collect()
}

/// Joins the pooled sources of an `msda` task in its name (`art_painting+cartoon`).
pub const SOURCE_SEPARATOR: &str = "+";

/// A task's source, held: one domain, or several pooled (`msda`).
pub(super) enum TaskSource {
    One(data::Domain),
    Pooled(data::PooledSource),
}

impl TaskSource {
    /// The source as a fit takes it.
    pub(super) fn as_sources(&self) -> Sources<'_> {
        match self {
            TaskSource::One(d) => Sources::One(d),
            TaskSource::Pooled(p) => Sources::Pooled(p),
        }
    }
}

/// The task's source and target under its protocol.
pub(super) fn load_task(
    spec: &GridSpec,
    s: &str,
    t: &str,
) -> Result<(TaskSource, data::Domain, Protocol)> {
    if spec.setting == Protocol::Msda.name() {
        let names: Vec<String> = s.split(SOURCE_SEPARATOR).map(str::to_string).collect();
        let (pooled, tgt) = data::load_sources(&spec.data, &names, t)?;
        return Ok((TaskSource::Pooled(pooled), tgt, Protocol::Msda));
    }
    let (src0, tgt0) = data::load_pair(&spec.data, s, t)?;
    let proto = Protocol::parse(&spec.setting, src0.n_classes(), spec.pda_classes)?;
    let (src, tgt) = protocol::apply(proto, &src0, &tgt0)?;
    Ok((TaskSource::One(src), tgt, proto))
}
