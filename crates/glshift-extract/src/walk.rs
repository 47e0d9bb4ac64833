//! Finds the images of `ROOT/<domain>/<class>/*`: domains and classes in sorted folder-name
//! order, files sorted by name inside each class, rows ordered by class then file name (the
//! order of the reference features). A domain folder without class sub-folders is unlabelled:
//! its own files, sorted by name.
//!
//! A class folder with no file is listed in [`Layout::empty_class_folders`] (the CLI warns and
//! `extract.json` names it). A class whose folders are empty in every domain is not a class of
//! the output: it is left out of `classes.txt` ([`Layout::classes_left_out`]) rather than kept
//! as a class with zero rows. A class empty in some domains only stays (partial DA data has
//! such classes). Leaving a class out renumbers the classes after it; a model fitted on
//! features that had it refuses the new features by name (`glshift predict` compares the class
//! lists), so no label is silently scored against the wrong class.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// One domain's files in row order; `label` is the class index (`None` when unlabelled).
#[derive(Debug, Clone)]
pub struct DomainFiles {
    pub name: String,
    pub dir: PathBuf,
    pub files: Vec<(PathBuf, Option<usize>)>,
    /// Files found beside the class folders of a labelled domain (not extracted, reported).
    pub loose: Vec<PathBuf>,
}

impl DomainFiles {
    /// Whether the domain has class folders.
    pub fn labelled(&self) -> bool {
        self.files.first().is_some_and(|(_, l)| l.is_some())
    }
}

/// The images of a dataset folder: class names (the union over labelled domains, sorted) and
/// each domain's files.
#[derive(Debug, Clone)]
pub struct Layout {
    pub classes: Vec<String>,
    pub domains: Vec<DomainFiles>,
    /// Class folders that hold no file, in walk order.
    pub empty_class_folders: Vec<PathBuf>,
    /// Class names whose folders are empty in every domain (not in `classes`).
    pub classes_left_out: Vec<String>,
}

/// Sorted (sub-folders, files) of `dir`, skipping names starting with '.'.
fn list(dir: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let err = |e: std::io::Error| Error::Folder { path: dir.to_path_buf(), reason: e.to_string() };
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(dir).map_err(err)? {
        let entry = entry.map_err(err)?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            dirs.push(path);
        } else {
            files.push(path);
        }
    }
    dirs.sort();
    files.sort();
    Ok((dirs, files))
}

fn name_of(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// One domain folder as listed: its class folders with their files, and its own files.
struct Listed {
    dir: PathBuf,
    classes: Vec<(PathBuf, Vec<PathBuf>)>,
    files: Vec<PathBuf>,
}

/// Walks `root`; an error when it holds no domain folder or a domain holds no file.
pub fn walk(root: &Path) -> Result<Layout> {
    let (domain_dirs, _) = list(root)?;
    if domain_dirs.is_empty() {
        let reason = "expected one sub-folder per domain (DIR/<domain>/<class>/<image>)".into();
        return Err(Error::Empty { path: root.to_path_buf(), reason });
    }
    let mut listed = Vec::with_capacity(domain_dirs.len());
    for d in &domain_dirs {
        let (class_dirs, files) = list(d)?;
        let classes =
            class_dirs.into_iter().map(|c| list(&c).map(|(_, f)| (c, f))).collect::<Result<_>>()?;
        listed.push(Listed { dir: d.clone(), classes, files });
    }
    let all_classes = |keep: &dyn Fn(&[PathBuf]) -> bool| -> Vec<String> {
        let mut names: Vec<String> = listed
            .iter()
            .flat_map(|l| &l.classes)
            .filter(|(_, f)| keep(f))
            .map(|(c, _)| name_of(c))
            .collect();
        names.sort();
        names.dedup();
        names
    };
    let classes = all_classes(&|f| !f.is_empty());
    let classes_left_out: Vec<String> =
        all_classes(&|_| true).into_iter().filter(|c| classes.binary_search(c).is_err()).collect();
    let empty_class_folders = listed
        .iter()
        .flat_map(|l| &l.classes)
        .filter(|(_, f)| f.is_empty())
        .map(|(c, _)| c.clone())
        .collect();
    let domains = listed.into_iter().map(|l| domain_files(l, &classes)).collect::<Result<_>>()?;
    Ok(Layout { classes, domains, empty_class_folders, classes_left_out })
}

/// A listed domain's rows (class then file order); an error when it has no file.
fn domain_files(l: Listed, classes: &[String]) -> Result<DomainFiles> {
    let domain = if l.classes.is_empty() {
        let files = l.files.into_iter().map(|f| (f, None)).collect();
        DomainFiles { name: name_of(&l.dir), dir: l.dir, files, loose: Vec::new() }
    } else {
        let mut rows = Vec::new();
        for (c, files) in l.classes {
            // A class with no file anywhere is not in `classes`; its (empty) folder adds no row.
            if let Ok(label) = classes.binary_search(&name_of(&c)) {
                rows.extend(files.into_iter().map(|f| (f, Some(label))));
            }
        }
        DomainFiles { name: name_of(&l.dir), dir: l.dir, files: rows, loose: l.files }
    };
    if domain.files.is_empty() {
        let reason = format!("domain {} has no image files", domain.name);
        return Err(Error::Empty { path: domain.dir, reason });
    }
    Ok(domain)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }

    #[test]
    fn rows_follow_class_then_file_name_and_unlabelled_domains_have_no_labels() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for f in [
            "a/mug/2.jpg",
            "a/mug/10.jpg",
            "a/bike/z.png",
            "b/mug/1.jpg",
            "b/cat/1.jpg",
            "u/x.jpg",
            "u/w.jpg",
        ] {
            touch(&r.join(f));
        }
        let l = walk(r).unwrap();
        assert_eq!(l.classes, ["bike", "cat", "mug"]);
        let a = &l.domains[0];
        let names: Vec<String> = a.files.iter().map(|(p, _)| name_of(p)).collect();
        assert_eq!(names, ["z.png", "10.jpg", "2.jpg"]); // Python sorted order: "10" < "2"
        assert_eq!(a.files.iter().map(|f| f.1).collect::<Vec<_>>(), [Some(0), Some(2), Some(2)]);
        assert!(l.domains[1].labelled());
        let u = &l.domains[2];
        assert!(!u.labelled());
        assert_eq!(u.files.iter().map(|(p, _)| name_of(p)).collect::<Vec<_>>(), ["w.jpg", "x.jpg"]);
    }

    #[test]
    fn empty_root_and_empty_domain_are_errors_naming_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let e = walk(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("no images found") && e.contains(&dir.path().display().to_string()),
            "{e}"
        );
        std::fs::create_dir_all(dir.path().join("d/cls")).unwrap();
        let e = walk(dir.path()).unwrap_err().to_string();
        assert!(e.contains("domain d has no image files"), "{e}");
    }

    #[test]
    fn a_class_empty_everywhere_is_left_out_and_one_empty_in_one_domain_stays() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for f in ["a/mug/1.jpg", "a/bike/1.jpg", "b/mug/1.jpg"] {
            touch(&r.join(f));
        }
        for d in ["a/cat", "b/cat", "b/bike"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        let l = walk(r).unwrap();
        assert_eq!(l.classes, ["bike", "mug"]);
        assert_eq!(l.classes_left_out, ["cat"]);
        let empty: Vec<String> = l
            .empty_class_folders
            .iter()
            .map(|p| p.strip_prefix(r).unwrap().display().to_string())
            .collect();
        assert_eq!(empty, ["a/cat", "b/bike", "b/cat"]);
        assert_eq!(l.domains[0].files.iter().map(|f| f.1).collect::<Vec<_>>(), [Some(0), Some(1)]);
        assert_eq!(l.domains[1].files.iter().map(|f| f.1).collect::<Vec<_>>(), [Some(1)]);
    }
}
