//! The repository as a user gets it, and its documented commands run as a user types them.
//!
//! [`clean_copy`] copies what git would commit (tracked files and new files git does not
//! ignore) into an empty directory: no `target/`, no `node_modules`, nothing a build left.
//! [`Shell`] runs one command line through `sh -c`, as Spin runs a manifest's build commands and
//! as a user pastes a README line, in a process group of its own so that stopping it stops
//! `cargo run`'s child too.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ lives in the repository").to_path_buf()
}

/// The README's fenced code blocks, in order: each its language and its lines.
pub fn readme_code_blocks() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let mut blocks = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        match (line.trim_start().strip_prefix("```"), current.as_mut()) {
            (Some(_), Some(_)) => blocks.push(current.take().unwrap()),
            (Some(lang), None) => current = Some((lang.trim().to_owned(), Vec::new())),
            (None, Some((_, lines))) => lines.push(line.to_owned()),
            (None, None) => {}
        }
    }
    assert!(current.is_none(), "an unclosed code block in README.md");
    blocks
}

/// What a clean clone of the working tree would hold, in a new temporary directory.
pub fn clean_copy() -> tempfile::TempDir {
    let root = root();
    let listed = Command::new("git")
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .current_dir(&root)
        .output()
        .expect("run git ls-files");
    assert!(listed.status.success(), "git ls-files failed");
    let copy = tempfile::tempdir().expect("a temporary directory");
    for name in listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).expect("UTF-8 file names");
        let from = root.join(name);
        if !from.is_file() {
            continue; // deleted in the working tree, not yet committed
        }
        let to = copy.path().join(name);
        std::fs::create_dir_all(to.parent().unwrap()).expect("create a directory in the copy");
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("copy {name}: {e}"));
    }
    copy
}

/// The environment of a user's shell: the variables cargo sets for a test binary removed.
pub fn user_command(line: &str, dir: &Path) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", line]).current_dir(dir);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let from_cargo = name.starts_with("CARGO_") && name != "CARGO_HOME" && name != "CARGO_TARGET_DIR";
        let from_rustup = name == "RUSTUP_TOOLCHAIN";
        if from_cargo || from_rustup || name == "CARGO" || name == "RUSTC" || name.starts_with("RUST_") {
            cmd.env_remove(&*name);
        }
    }
    cmd.process_group(0);
    cmd
}

/// Runs `cmd` to its end; its standard output, or a panic with its error output unless it
/// exits 0.
pub fn output(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// Runs `line` to its end in `dir`; panics with its output unless it exits 0.
pub fn run_to_end(line: &str, dir: &Path, envs: &[(&str, &str)]) -> String {
    let out = user_command(line, dir).envs(envs.iter().copied()).output().expect("run sh");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "`{line}` in {} failed ({}):\n{text}", dir.display(), out.status);
    text
}

/// A command line left running; its whole process group is killed on drop.
pub struct Shell {
    line: String,
    child: Child,
    output: Arc<Mutex<String>>,
}

impl Shell {
    /// Starts `line` in `dir`, collecting what it prints.
    pub fn start(line: &str, dir: &Path) -> Self {
        Self::start_with(line, dir, &[])
    }

    /// [`Shell::start`] with `envs` set.
    pub fn start_with(line: &str, dir: &Path, envs: &[(&str, &str)]) -> Self {
        let mut child = user_command(line, dir)
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start `{line}`: {e}"));
        let output = Arc::new(Mutex::new(String::new()));
        for pipe in [
            child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let output = Arc::clone(&output);
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
                    out.push_str(&line);
                    out.push('\n');
                }
            });
        }
        Self { line: line.to_owned(), child, output }
    }

    /// What it printed so far.
    pub fn output(&self) -> String {
        self.output.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until `addr` accepts connections (building first may take minutes).
    pub fn wait_listening(&mut self, addr: SocketAddr) {
        self.wait_until(
            Duration::from_secs(600),
            |_| TcpStream::connect(addr).is_ok(),
            &format!("listen on {addr}"),
        );
    }

    /// Waits until what it printed contains `text`.
    pub fn wait_printed(&mut self, text: &str, within: Duration) {
        self.wait_until(within, |out| out.contains(text), &format!("print {text:?}"));
    }

    fn wait_until(&mut self, within: Duration, done: impl Fn(&str) -> bool, what: &str) {
        let deadline = Instant::now() + within;
        loop {
            if done(&self.output()) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                if done(&self.output()) {
                    return;
                }
                panic!("`{}` exited ({status}) before it would {what}:\n{}", self.line, self.output());
            }
            assert!(Instant::now() < deadline, "`{}` did not {what} in time:\n{}", self.line, self.output());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        // The group: `sh`, `cargo run` and the server it started.
        let group = self.child.id() as i32;
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).status();
        let _ = self.child.wait();
    }
}
