//! The tables a reader trusts, held to the code: the README's configuration table and the WIT
//! `config` record name exactly `Config`'s fields (with its defaults), and the README's
//! decision table and the WIT `stale-reason` enum name exactly `StaleReason::ALL`, in order.

use std::path::Path;

use resume_gate::{Config, StaleReason};
use wit_parser::{Resolve, TypeDefKind};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

/// The rows of the markdown table whose header line is `header`, as trimmed cells.
fn table(text: &str, header: &str) -> Vec<Vec<String>> {
    let start = text.find(header).unwrap_or_else(|| panic!("README has no table `{header}`"));
    text[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().to_owned()).collect())
        .collect()
}

/// The words in backticks in `cell`.
fn quoted(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// `Config`'s fields and values as its `Debug` shows them, names in the WIT's kebab case.
fn config_fields(config: &Config) -> Vec<(String, String)> {
    let debug = format!("{config:?}");
    let inner = debug.strip_prefix("Config { ").and_then(|d| d.strip_suffix(" }")).expect("a struct");
    inner
        .split(", ")
        .map(|field| {
            let (name, value) = field.split_once(": ").expect("name: value");
            let value = match value {
                "None" => "none".to_owned(),
                v => v.strip_prefix("Some(").and_then(|v| v.strip_suffix(')')).unwrap_or(v).to_owned(),
            };
            (name.replace('_', "-"), value)
        })
        .collect()
}

/// The WIT type `name` of interface `types`.
fn wit_type(name: &str) -> TypeDefKind {
    let mut resolve = Resolve::new();
    resolve.push_dir(root().join("wit")).expect("the WIT parses");
    let (_, types) =
        resolve.interfaces.iter().find(|(_, i)| i.name.as_deref() == Some("types")).expect("interface types");
    let id = types.types[name];
    resolve.types[id].kind.clone()
}

fn reasons() -> Vec<String> {
    StaleReason::ALL.iter().map(|r| r.as_str().to_owned()).collect()
}

#[test]
fn the_readme_configuration_table_is_config_with_its_defaults() {
    let code = config_fields(&Config::default());
    let readme: Vec<(String, String)> = table(&readme(), "| field | default | what it bounds |")
        .iter()
        .map(|row| {
            let name = quoted(&row[0]).pop().expect("a field in backticks");
            let default = row[1].split(' ').next().expect("a default").to_owned();
            (name, default)
        })
        .collect();
    assert_eq!(readme, code, "README's configuration table against Config::default()");
}

#[test]
fn the_wit_config_record_has_config_fields_in_order() {
    let TypeDefKind::Record(record) = wit_type("config") else { panic!("config is a record") };
    let wit: Vec<String> = record.fields.iter().map(|f| f.name.clone()).collect();
    let code: Vec<String> = config_fields(&Config::default()).into_iter().map(|(name, _)| name).collect();
    assert_eq!(wit, code);
}

#[test]
fn the_wit_stale_reason_enum_is_stale_reason_all_in_order() {
    let TypeDefKind::Enum(e) = wit_type("stale-reason") else { panic!("stale-reason is an enum") };
    let wit: Vec<String> = e.cases.iter().map(|c| c.name.clone()).collect();
    assert_eq!(wit, reasons());
}

#[test]
fn the_readme_decision_table_names_every_stale_reason_in_order() {
    let mut named: Vec<String> = Vec::new();
    for row in table(&readme(), "| # | check | if it fails |") {
        if let Some(fresh) = row[2].strip_prefix("fresh:") {
            for reason in quoted(fresh.split(';').next().unwrap_or(fresh)) {
                if !named.contains(&reason) {
                    named.push(reason);
                }
            }
        }
    }
    assert_eq!(named, reasons(), "each reason, first named in the order the checks run");
}

#[test]
fn every_crate_and_package_carries_the_readmes_license() {
    const LICENSE: &str = "MIT OR Apache-2.0";
    let declared = |path: &str, key: &str| -> String {
        let text = std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .map(|v| v.trim_start_matches([' ', ':', '=']).trim_matches([' ', '"', ',']).to_owned())
            .unwrap_or_else(|| panic!("{path} declares no license"))
    };
    assert_eq!(declared("Cargo.toml", "license"), LICENSE);
    assert_eq!(declared("hosts/node/package.json", "\"license\""), LICENSE);
    assert_eq!(declared("hosts/python/pyproject.toml", "license"), LICENSE);
    let workspace: toml::Table = std::fs::read_to_string(root().join("Cargo.toml")).unwrap().parse().unwrap();
    let members = workspace["workspace"]["members"].as_array().expect("members");
    for member in members.iter().filter_map(|m| m.as_str()) {
        let text = std::fs::read_to_string(root().join(member).join("Cargo.toml")).expect("a manifest");
        assert!(text.contains("license.workspace = true"), "{member} sets its own license");
    }
    assert!(readme().contains(&format!("`{LICENSE}`")));
    for file in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(root().join(file).is_file(), "{file} is missing");
    }
}
