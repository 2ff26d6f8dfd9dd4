//! The npm package and the Python wheel work where their users are: made here (`npm pack`,
//! `python -m build --wheel`), then installed into an empty project in a temporary directory
//! with cargo and rustc taken off `PATH` and nothing of this repository in reach. There the
//! README's install line, its example server and its start command run as written, the
//! official client of each SDK calls the server, and each package's own tests pass.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use tests::sdk_hosts::{node_dir, prepare_node, prepare_python, python_dir};
use tests::workspace::{Shell, output, readme_code_blocks, root, run_to_end};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The README's install line that starts with `install`, the line of its block (or a later
/// one) that starts the example, and the example: the `lang` block after it, saved as `file`.
struct Shown {
    install: String,
    example: String,
    start: String,
}

fn shown(install: &str, lang: &str, file: &str) -> Shown {
    let blocks = readme_code_blocks();
    let sh_line = |from: usize, prefix: &str| {
        blocks[from..]
            .iter()
            .filter(|(l, _)| l == "sh")
            .find_map(|(_, lines)| lines.iter().find(|x| x.starts_with(prefix)).cloned())
            .unwrap_or_else(|| panic!("README.md shows no line starting `{prefix}`"))
    };
    let at = blocks
        .iter()
        .position(|(l, lines)| l == "sh" && lines.iter().any(|x| x.starts_with(install)))
        .unwrap_or_else(|| panic!("README.md shows no `{install}` line"));
    let example = (at..blocks.len()).find(|&i| blocks[i].0 == lang).expect("an example after it");
    Shown {
        install: sh_line(at, install),
        example: blocks[example].1.join("\n") + "\n",
        start: sh_line(at, &format!("{} {file}", if lang == "js" { "node" } else { "python" })),
    }
}

/// Succeeds only where neither cargo nor rustc can be found.
const NO_RUST: &str = "! command -v cargo && ! command -v rustc";

/// `PATH` without the directories that hold cargo or rustc.
fn path_without_rust() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let kept: Vec<&str> = path
        .split(':')
        .filter(|d| !["cargo", "rustc"].iter().any(|tool| Path::new(d).join(tool).exists()))
        .collect();
    kept.join(":")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// An empty directory outside the repository with the made `package` copied in.
fn empty_project(package: &Path) -> tempfile::TempDir {
    // A name npm takes for a package (a temporary directory's own starts with a dot).
    let dir = tempfile::Builder::new().prefix("my-server-").tempdir().expect("a temporary directory");
    assert!(!dir.path().starts_with(root()), "the project must be outside the repository");
    std::fs::copy(package, dir.path().join(package.file_name().unwrap())).expect("copy the package");
    dir
}

/// Starts the README's `start` line in `dir` on a free port (`PORT`), until it listens.
fn start(start: &str, dir: &Path, envs: &[(&str, &str)]) -> (Shell, SocketAddr) {
    let port = free_port();
    let port_text = port.to_string();
    let mut all = envs.to_vec();
    all.push(("PORT", &port_text));
    let mut shell = Shell::start_with(start, dir, &all);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    shell.wait_listening(addr);
    (shell, addr)
}

#[test]
fn the_npm_tarball_installs_and_serves_without_rust_or_this_repository() {
    let packed = npm_pack();
    let (project, path) = (empty_project(&tarball(&packed)), path_without_rust());
    let env = [("PATH", path.as_str())];
    let readme = shown("npm install ./resume-gate-", "js", "server.mjs");
    assert!(readme.install.contains("@modelcontextprotocol/sdk@1.32"), "{}", readme.install);
    let said = install_serve_and_call(&readme, project.path(), &env, NODE_CLIENT);
    assert!(said.contains(r#"{"type":"text","text":"hello"}"#), "the official client's call: {said}");
    let tests = run_to_end("npm test", &project.path().join("node_modules/resume-gate"), &env);
    assert!(tests.contains("# pass 12") && tests.contains("# fail 0"), "the package's own tests:\n{tests}");
}

/// The same tarball beside the TypeScript SDK 2.x: the README's 2.x server serves both eras;
/// the newest official client calls it in the new era and in the 2025 one (the gate's).
#[test]
fn the_npm_tarball_serves_both_eras_on_the_typescript_sdk_2() {
    let packed = npm_pack();
    let (project, path) = (empty_project(&tarball(&packed)), path_without_rust());
    let env = [("PATH", path.as_str())];
    let readme = shown(
        &format!("npm install ./resume-gate-{VERSION}.tgz @modelcontextprotocol/server"),
        "js",
        "server.mjs",
    );
    run_to_end("npm install --no-audit --no-fund @modelcontextprotocol/client@2.4.0", project.path(), &env);
    let said = install_serve_and_call(&readme, project.path(), &env, NODE_2_CLIENT);
    for mode in ["legacy", "auto"] {
        assert!(said.contains(&format!(r#"{mode} {{"type":"text","text":"hello"}}"#)), "{mode}: {said}");
    }
    assert!(said.contains("legacy session true") && said.contains("auto session false"), "{said}");
    let tests = run_to_end("npm test", &project.path().join("node_modules/resume-gate"), &env);
    assert!(tests.contains("# pass 12") && tests.contains("# fail 0"), "the package's own tests:\n{tests}");
}

/// `npm pack` in `hosts/node`, into a temporary directory.
fn npm_pack() -> tempfile::TempDir {
    prepare_node();
    let packed = tempfile::tempdir().unwrap();
    output(
        Command::new("npm")
            .args(["pack", "--silent", "--pack-destination"])
            .arg(packed.path())
            .current_dir(node_dir())
            .env("RESUME_GATE_WASM", gate_host::GATE_MEMORY_WASM)
            .env("RESUME_GATE_KV_WASM", gate_host::GATE_KV_WASM),
    );
    packed
}

fn tarball(packed: &tempfile::TempDir) -> std::path::PathBuf {
    packed.path().join(format!("resume-gate-{VERSION}.tgz"))
}

/// Runs the README's install line and its server in `dir` (no Rust on `PATH`), then `client`
/// against it; what the client printed.
fn install_serve_and_call(readme: &Shown, dir: &Path, env: &[(&str, &str)], client: &str) -> String {
    assert!(readme.install.contains(&format!("resume-gate-{VERSION}.tgz")), "{}", readme.install);
    run_to_end(NO_RUST, dir, env);
    if !dir.join("package.json").exists() {
        run_to_end("npm init -y", dir, env);
    }
    run_to_end(&readme.install, dir, env);
    std::fs::write(dir.join("server.mjs"), &readme.example).unwrap();
    let (_server, addr) = start(&readme.start, dir, env);
    std::fs::write(dir.join("client.mjs"), client).unwrap();
    run_to_end(&format!("node client.mjs http://{addr}/mcp"), dir, env)
}

/// The official TypeScript client (installed with the SDK) calls `hello`.
const NODE_CLIENT: &str = r#"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
const client = new Client({ name: "packages-test", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
console.log(JSON.stringify(await client.callTool({ name: "hello", arguments: {} })));
await client.close();
"#;

/// The newest official TypeScript client, in its 2025 mode and in its negotiating one, calls
/// `hello`; it says whether it got a session.
const NODE_2_CLIENT: &str = r#"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
for (const mode of ["legacy", "auto"]) {
  const client = new Client({ name: "packages-test", version: "1" }, { versionNegotiation: { mode } });
  const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
  await client.connect(transport);
  const result = await client.callTool({ name: "hello", arguments: {} });
  console.log(mode, JSON.stringify(result.content[0]));
  console.log(mode, "session", transport.sessionId !== undefined);
  await client.close();
}
"#;

#[test]
fn the_python_wheel_installs_and_serves_without_rust_or_this_repository() {
    prepare_python();
    let built = tempfile::tempdir().unwrap();
    let venv_python = python_dir().join(".venv/bin/python");
    output(
        Command::new(&venv_python)
            .args(["-m", "build", "--wheel", "--no-isolation", "--outdir"])
            .arg(built.path())
            .arg(python_dir())
            .env("RESUME_GATE_WASM", gate_host::GATE_MEMORY_WASM),
    );
    let wheel = built.path().join(format!("resume_gate-{VERSION}-py3-none-any.whl"));
    let project = empty_project(&wheel);
    let dir = project.path();
    let bare = path_without_rust();
    run_to_end(NO_RUST, dir, &[("PATH", &bare)]);
    run_to_end("python3 -m venv .venv", dir, &[("PATH", &bare)]);
    // As a user with the virtualenv activated.
    let path = format!("{}:{bare}", dir.join(".venv/bin").display());
    let venv = dir.join(".venv");
    let env = [("PATH", path.as_str()), ("VIRTUAL_ENV", venv.to_str().expect("a UTF-8 temp path"))];
    let readme = shown("pip install ", "python", "server.py");
    assert!(
        readme.install.contains(&format!("resume_gate-{VERSION}-py3-none-any.whl")),
        "{}",
        readme.install
    );
    run_to_end(&readme.install, dir, &env);
    std::fs::write(dir.join("server.py"), &readme.example).unwrap();
    let (_server, addr) = start(&readme.start, dir, &env);
    std::fs::write(dir.join("client.py"), PYTHON_CLIENT).unwrap();
    let said = run_to_end(&format!("python client.py http://{addr}/mcp"), dir, &env);
    assert!(said.contains("hello"), "the official client's call: {said}");
    run_to_end("pip install --quiet pytest==9.2.0", dir, &env);
    let tests = run_to_end("python -m pytest --pyargs resume_gate -p no:cacheprovider", dir, &env);
    assert!(tests.contains("12 passed in"), "the package's own tests:\n{tests}");
}

/// The official Python client (the `mcp` package the `sdk` extra installs) calls `hello`.
const PYTHON_CLIENT: &str = r#"
import asyncio
import sys

from mcp.client import Client


async def main() -> None:
    async with Client(sys.argv[1]) as client:
        result = await client.call_tool("hello", {})
        print(result.content[0].text)


asyncio.run(main())
"#;
