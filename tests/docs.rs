//! Every relative link in README.md and docs/*.md points at a file or
//! directory of the repository, and every `#anchor` at a heading of its
//! target, so moving or renaming a file or a section breaks the build
//! instead of the documentation.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file under docs/.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    let entries = std::fs::read_dir(root().join("docs")).expect("reading docs/");
    for e in entries {
        let path = e.expect("a docs/ entry").path();
        if path.extension().is_some_and(|x| x == "md") {
            docs.push(path);
        }
    }
    docs.sort();
    docs
}

/// The targets of the inline links `[text](target)` in @text, outside
/// fenced code blocks.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            match after.find(')') {
                Some(j) => {
                    targets.push(after[..j].to_string());
                    rest = &after[j + 1..];
                }
                None => break,
            }
        }
    }
    targets
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-`
/// and `_` dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of @text's headings, outside fenced code blocks.
fn anchors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// What is wrong with link @target in document @doc, if anything.
fn broken(doc: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (file, anchor) = match target.split_once('#') {
        Some((f, a)) => (f, Some(a)),
        None => (target, None),
    };
    let path = if file.is_empty() {
        doc.to_path_buf()
    } else {
        doc.parent().expect("a document's directory").join(file)
    };
    if !path.exists() {
        return Some(format!("{} does not exist", path.display()));
    }
    let anchor = anchor?;
    let text = std::fs::read_to_string(&path).ok()?;
    if anchors(&text).iter().any(|a| a == anchor) {
        None
    } else {
        Some(format!("{} has no heading #{anchor}", path.display()))
    }
}

#[test]
fn relative_links_resolve() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("reading a document");
        for target in link_targets(&text) {
            checked += 1;
            if let Some(why) = broken(&doc, &target) {
                bad.push(format!("{}: ({target}): {why}", doc.display()));
            }
        }
    }
    assert!(checked > 0, "no links found: is the parser broken?");
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn the_checker_sees_links_and_anchors() {
    let text = "# A `b` c_d\n[x](docs/policy.md#hot-swap) and [y](#a-b-c_d)\n```\n[z](nope)\n```\n";
    assert_eq!(link_targets(text), ["docs/policy.md#hot-swap", "#a-b-c_d"]);
    assert_eq!(anchors(text), ["a-b-c_d"]);
    let readme = root().join("README.md");
    assert!(broken(&readme, "docs/policy.md#hot-swap").is_none());
    assert!(broken(&readme, "docs/policy.md#no-such-section").is_some());
    assert!(broken(&readme, "docs/no-such-file.md").is_some());
}
