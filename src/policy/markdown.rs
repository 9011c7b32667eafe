//! `scx_cadence policies --markdown`: the policy fields and the presets'
//! values as Markdown tables, rendered from the schema's field list and the
//! shipped presets. docs/policy.md holds this output between two marker
//! comments, and tests/cli.rs fails when the two differ, so the reference
//! has one source: FIELDS and presets/.

use super::{FIELDS, Named, PRESETS};

/// The field table (key, allowed values, meaning) and the preset table (each
/// field's value in each preset), as Markdown.
pub fn markdown() -> String {
    let mut out = String::new();
    out.push_str("| field | allowed | meaning |\n|---|---|---|\n");
    for f in FIELDS {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            f.key,
            cell(&f.kind.allowed()),
            cell(f.doc)
        ));
    }

    // Every preset, every field filled in (a preset may leave fields to the
    // default preset, as any policy file may).
    let presets: Vec<(&str, toml::Table)> = PRESETS
        .iter()
        .map(|(name, _)| {
            let named = Named::load(name).expect("presets are valid");
            let table = named
                .policy
                .to_toml()
                .parse::<toml::Table>()
                .expect("a policy's TOML parses");
            (*name, table)
        })
        .collect();
    out.push_str("\n| field |");
    for (name, _) in &presets {
        let default = if *name == super::DEFAULT_PRESET {
            " (default)"
        } else {
            ""
        };
        out.push_str(&format!(" `{name}`{default} |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(presets.len()));
    out.push('\n');
    for f in FIELDS {
        out.push_str(&format!("| `{}` |", f.key));
        for (_, table) in &presets {
            out.push_str(&format!(" {} |", value(table, f.key)));
        }
        out.push('\n');
    }
    out
}

/// The value at dotted @key in @table, as a Markdown cell: strings bare in
/// a code span, numbers and booleans as TOML writes them.
fn value(table: &toml::Table, key: &str) -> String {
    let (section, name) = key.split_once('.').expect("field keys are section.name");
    let v = table
        .get(section)
        .and_then(|s| s.get(name))
        .unwrap_or_else(|| panic!("the policy's TOML has no {key}"));
    match v {
        toml::Value::String(s) => format!("`{}`", cell(s)),
        other => cell(&other.to_string()),
    }
}

/// @text safe inside a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
