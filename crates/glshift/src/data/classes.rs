//! `classes.txt`: one class name per line, line i naming class index i.

use std::path::Path;

use crate::{Error, Result};

/// File name of the optional class list in a data folder.
pub(super) const CLASSES_FILE: &str = "classes.txt";

/// Class names from `dir/classes.txt`, or `None` when the folder has no such file.
/// Trailing empty lines are ignored; an empty line before a name, or a repeated name, is
/// an error (either would silently shift or merge class indices).
pub(super) fn read_classes(dir: &Path) -> Result<Option<Vec<String>>> {
    let path = dir.join(CLASSES_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|source| Error::Io { path: path.clone(), source })?;
    let mut names: Vec<String> = text.lines().map(|l| l.trim().to_string()).collect();
    while names.last().is_some_and(|l| l.is_empty()) {
        names.pop();
    }
    if names.is_empty() {
        return Err(Error::bad_file(&path, "no class names"));
    }
    if let Some(i) = names.iter().position(|l| l.is_empty()) {
        return Err(Error::bad_file(&path, format!("line {} is empty", i + 1)));
    }
    for (i, name) in names.iter().enumerate() {
        if let Some(j) = names[..i].iter().position(|m| m == name) {
            return Err(Error::bad_file(
                &path,
                format!("class name {name:?} appears on lines {} and {}", j + 1, i + 1),
            ));
        }
    }
    Ok(Some(names))
}
