//! Several labelled source domains pooled into one (`glshift fit --source a,b`).
//!
//! The sources are sorted by name and their rows stacked in that order, so any order of the
//! names gives the same pooled domain and the same fit. The pooled source keeps which rows
//! came from which domain ([`SourcePart`]): its hold-out is stratified by class *and* domain
//! ([`PooledSource::holdout`]), and a report can give each domain's counts, prior and hold-out
//! accuracy. Its prior is the pooled one (the class frequencies over every source row).

use std::ops::Range;
use std::path::Path;

use ndarray::{concatenate, Axis};

use super::{load_pair, Domain};
use crate::{Error, Result};

/// One source domain's rows in the pooled source.
#[derive(Clone, Debug, PartialEq)]
pub struct SourcePart {
    pub name: String,
    /// Its rows in the pooled source, `start..end`.
    pub rows: Range<usize>,
}

/// Source domains stacked into one labelled domain (`pooled`, named `a+b+…`), with the rows
/// each came from.
#[derive(Debug)]
pub struct PooledSource {
    pub pooled: Domain,
    pub parts: Vec<SourcePart>,
}

/// The source names sorted, after the checks: at least one, none named twice, none equal to
/// the target.
pub fn check_source_names(sources: &[String], target: &str) -> Result<Vec<String>> {
    if sources.is_empty() {
        return Err(Error::param("source", "(none)", "give at least one source domain"));
    }
    let mut sorted = sources.to_vec();
    sorted.sort();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::param(
            "source",
            sources.join(","),
            format!("'{}' is named twice", w[0]),
        ));
    }
    if sorted.iter().any(|s| s == target) {
        return Err(Error::param(
            "source",
            sources.join(","),
            format!("the target '{target}' cannot also be a source"),
        ));
    }
    Ok(sorted)
}

/// Loads every source with the target from `dir` ([`load_pair`]'s checks for each pair: both
/// non-empty and finite, the same feature width and class list, a labelled source) and pools
/// the sources. Errors name the domain and its file.
pub fn load_sources(
    dir: &Path,
    sources: &[String],
    target: &str,
) -> Result<(PooledSource, Domain)> {
    let names = check_source_names(sources, target)?;
    let mut loaded = Vec::with_capacity(names.len());
    let mut target_domain = None;
    for name in &names {
        let (s, t) = load_pair(dir, name, target)?;
        loaded.push(s);
        target_domain = Some(t);
    }
    let target = target_domain.expect("at least one source");
    Ok((pool(loaded, dir)?, target))
}

/// Stacks `sources` (in their order: [`load_sources`] sorts them) into one domain. Errors:
/// different feature widths or class lists, naming both domains' files.
pub fn pool(sources: Vec<Domain>, dir: &Path) -> Result<PooledSource> {
    let first = sources.first().ok_or_else(|| Error::param("source", "(none)", "no source"))?;
    for s in &sources[1..] {
        if s.features.ncols() != first.features.ncols() {
            return Err(Error::bad_data(
                s.path.display().to_string(),
                format!(
                    "source '{}' has {} features, source '{}' ({}) has {}",
                    s.name,
                    s.features.ncols(),
                    first.name,
                    first.path.display(),
                    first.features.ncols()
                ),
            ));
        }
        if s.class_names != first.class_names {
            return Err(Error::bad_data(
                s.path.display().to_string(),
                format!("source '{}' has other classes than source '{}'", s.name, first.name),
            ));
        }
    }
    let mut parts = Vec::with_capacity(sources.len());
    let mut start = 0;
    for s in &sources {
        parts.push(SourcePart { name: s.name.clone(), rows: start..start + s.n() });
        start += s.n();
    }
    let views: Vec<_> = sources.iter().map(|s| s.features.view()).collect();
    let features = concatenate(Axis(0), &views)
        .map_err(|e| Error::bad_data(dir.display().to_string(), e.to_string()))?;
    let labels: Vec<usize> =
        sources.iter().flat_map(|s| s.labels.clone().unwrap_or_default()).collect();
    let name = parts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join("+");
    let template = sources.into_iter().next().expect("checked non-empty");
    let pooled =
        Domain { name, features, labels: Some(labels), path: dir.to_path_buf(), ..template };
    Ok(PooledSource { pooled, parts })
}

impl PooledSource {
    /// The domain (index into `parts`) of every pooled row.
    pub fn domain_of_rows(&self) -> Vec<usize> {
        let mut d = vec![0; self.pooled.n()];
        for (i, p) in self.parts.iter().enumerate() {
            d[p.rows.clone()].iter_mut().for_each(|v| *v = i);
        }
        d
    }

    /// The hold-out rows (sorted), stratified by class and domain: the stratified split of
    /// [`crate::label_shift::stratified_holdout`] over the (class, domain) cells, so every
    /// domain's share of each class is held out alike.
    pub fn holdout(&self, fraction: f64, seed: u64) -> Result<Vec<usize>> {
        let labels = self.pooled.labels.as_deref().unwrap_or_default();
        let c = self.pooled.n_classes();
        holdout_by_class_and_domain(labels, &self.domain_of_rows(), c, fraction, seed)
    }
}

/// Hold-out rows (sorted) of source rows with `labels` (< `c`) and `domains` (any indices, one
/// per row), stratified by (class, domain): [`crate::label_shift::stratified_holdout`] over the
/// cells, so every domain's share of each class is held out alike. Errors: lengths differ.
pub fn holdout_by_class_and_domain(
    labels: &[usize],
    domains: &[usize],
    c: usize,
    fraction: f64,
    seed: u64,
) -> Result<Vec<usize>> {
    if labels.len() != domains.len() {
        return Err(Error::param(
            "source domains",
            domains.len(),
            format!("one domain per source row is needed ({} rows)", labels.len()),
        ));
    }
    let k = domains.iter().max().map_or(1, |&m| m + 1);
    let cells: Vec<usize> = labels.iter().zip(domains).map(|(&y, &d)| d * c + y).collect();
    let (_, hold) = crate::label_shift::stratified_holdout(&cells, c * k, fraction, seed)?;
    Ok(hold)
}

#[cfg(test)]
mod tests;
