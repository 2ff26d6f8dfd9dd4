//! One version everywhere a user meets it: the crates, the WIT package (the components'
//! interface names), the npm and Python packages, the Spin app and the changelog.

use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The workspace's version, which every crate takes.
const VERSION: &str = env!("CARGO_PKG_VERSION");

#[test]
fn every_crate_takes_the_workspace_version() {
    let workspace: toml::Table = read("Cargo.toml").parse().unwrap();
    assert_eq!(workspace["workspace"]["package"]["version"].as_str(), Some(VERSION));
    let members = workspace["workspace"]["members"].as_array().unwrap();
    for member in members {
        let path = format!("{}/Cargo.toml", member.as_str().unwrap());
        let manifest: toml::Table = read(&path).parse().unwrap();
        let version = &manifest["package"]["version"];
        assert!(
            version.get("workspace").and_then(toml::Value::as_bool) == Some(true)
                || version.as_str() == Some(VERSION),
            "{path}: version {version}, not the workspace's {VERSION}"
        );
    }
}

#[test]
fn the_packages_the_wit_package_the_spin_app_and_the_changelog_carry_it() {
    let node: serde_json::Value = serde_json::from_str(&read("hosts/node/package.json")).unwrap();
    assert_eq!(node["version"], VERSION, "hosts/node/package.json");
    let python: toml::Table = read("hosts/python/pyproject.toml").parse().unwrap();
    assert_eq!(python["project"]["version"].as_str(), Some(VERSION), "hosts/python/pyproject.toml");
    let package = format!("package mcp:resume-gate@{VERSION};");
    assert!(read("wit/gate.wit").contains(&package), "wit/gate.wit: {package}");
    let interface = format!("mcp:resume-gate/gate@{VERSION}");
    assert!(read("hosts/python/resume_gate/gate.py").contains(&interface), "gate.py: {interface}");
    assert!(read("hosts/node/src/index.js").contains(&interface), "index.js: {interface}");
    let spin: toml::Table = read("spin.toml").parse().unwrap();
    assert_eq!(spin["application"]["version"].as_str(), Some(VERSION), "spin.toml");
    let dependency = format!("\"mcp:resume-gate@{VERSION}\"");
    assert!(read("spin.toml").contains(&dependency), "spin.toml's gate dependency: {dependency}");
    let changelog = read("CHANGELOG.md");
    assert!(changelog.contains(&format!("\n## [{VERSION}] - ")), "CHANGELOG.md has no entry for {VERSION}");
}
