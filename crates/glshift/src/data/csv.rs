//! CSV reading: a header row is required; a column named exactly `label` holds integer
//! labels (absent = unlabelled domain); every other column is a numeric feature.
//! Errors name the file, the 1-based line and the column.

use std::io::Read;
use std::path::Path;

use ndarray::Array2;

use super::npy::float_label;
use super::{ParsedFile, RawDomain};
use crate::{Error, Result};

/// Reads one `<domain>.csv` file.
pub(super) fn read_csv(path: &Path) -> Result<RawDomain> {
    let file = std::fs::File::open(path)
        .map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    let parsed = parse_csv(file, path)?;
    Ok(RawDomain::new(parsed, path))
}

/// [`read_csv`] on any reader (the csv crate buffers it); `path` only names it in errors.
pub(super) fn parse_csv(reader: impl Read, path: &Path) -> Result<ParsedFile> {
    // `flexible` so that ragged rows reach our own check, which names the line.
    let mut rdr = ::csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(::csv::Trim::All)
        .from_reader(reader);
    let header = rdr
        .headers()
        .map_err(|e| Error::bad_file(path, format!("cannot read the header row: {e}")))?
        .clone();
    let label_col = check_header(&header, path)?;
    let d = header.len() - usize::from(label_col.is_some());
    let mut values: Vec<f32> = Vec::new();
    let mut labels: Vec<i64> = Vec::new();
    let mut n = 0usize;
    for rec in rdr.records() {
        let rec = rec.map_err(|e| Error::bad_file(path, format!("cannot read CSV: {e}")))?;
        read_record(&rec, &header, label_col, path, &mut values, &mut labels)?;
        n += 1;
    }
    let features = Array2::from_shape_vec((n, d), values)
        .map_err(|e| Error::bad_file(path, format!("internal shape error: {e}")))?;
    Ok(ParsedFile {
        features,
        labels: label_col.map(|_| labels),
        feature_names: Some(
            (0..header.len())
                .filter(|&j| Some(j) != label_col)
                .map(|j| header[j].to_string())
                .collect(),
        ),
    })
}

/// The header is one of column names, none empty, at most one named `label`; returns that
/// column's index.
fn check_header(header: &::csv::StringRecord, path: &Path) -> Result<Option<usize>> {
    if header.is_empty() || (header.len() == 1 && header[0].is_empty()) {
        return Err(Error::bad_file(path, "empty file: a header row is required"));
    }
    // A header of numbers means the file has no header: the first sample would be lost.
    // Exception: 0,1,2,... is how pandas names unnamed columns.
    let numbered = header.iter().enumerate().all(|(j, h)| h == j.to_string());
    if !numbered && header.iter().all(|h| h.parse::<f64>().is_ok()) {
        return Err(Error::bad_file(
            path,
            "line 1 looks like data, but a header row (column names) is required",
        ));
    }
    // An unnamed column is usually a pandas index: as a feature it would leak row order.
    if let Some(j) = header.iter().position(str::is_empty) {
        return Err(Error::bad_file(
            path,
            format!(
                "column {} has no name (an index column? write the file with index=False)",
                j + 1
            ),
        ));
    }
    let label_cols: Vec<usize> = (0..header.len()).filter(|&j| &header[j] == "label").collect();
    if label_cols.len() > 1 {
        return Err(Error::bad_file(path, "more than one column is named `label`"));
    }
    Ok(label_cols.first().copied())
}

/// Appends one data row's features to `values` and its label (column `label_col`) to
/// `labels`; errors name the line and the column.
fn read_record(
    rec: &::csv::StringRecord,
    header: &::csv::StringRecord,
    label_col: Option<usize>,
    path: &Path,
    values: &mut Vec<f32>,
    labels: &mut Vec<i64>,
) -> Result<()> {
    let line = rec.position().map_or(0, |p| p.line());
    if rec.len() != header.len() {
        return Err(Error::bad_file(
            path,
            format!(
                "line {line}: {} fields, but the header has {} columns",
                rec.len(),
                header.len()
            ),
        ));
    }
    for (j, cell) in rec.iter().enumerate() {
        let where_ = || format!("line {line}, column {} (`{}`)", j + 1, &header[j]);
        if Some(j) == label_col {
            let v = match cell.parse::<i64>() {
                Ok(v) => v,
                Err(_) => cell
                    .parse::<f64>()
                    .map_err(|_| ())
                    .and_then(|f| float_label(path, f).map_err(|_| ()))
                    .map_err(|_| {
                        Error::bad_file(
                            path,
                            format!("{}: label {cell:?} is not an integer", where_()),
                        )
                    })?,
            };
            labels.push(v);
        } else {
            let v: f32 = cell.parse().map_err(|_| {
                Error::bad_file(path, format!("{}: {cell:?} is not a number", where_()))
            })?;
            values.push(v);
        }
    }
    Ok(())
}
