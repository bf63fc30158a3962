//! The README's quick start, run as written against this build's `ltx`:
//! the commands of "Files between two machines" (a key pair, a receiver in
//! the background, a sender) on 127.0.0.1 with a free port in place of
//! 7000, then the file received compared with the one sent; the command of
//! "Simulator". And its library example is the code of
//! `crates/ltx/examples/echo_client.rs`, which the build compiles.
//!
//! The commands run through `sh` in a temporary directory, with the
//! directory of this build's `ltx` first on `PATH`, as the README's
//! `export PATH=...` sets it up. Every wait is bounded.

#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A file of the repository, by its path from the root.
fn repository_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn readme() -> String {
    std::fs::read_to_string(repository_file("README.md")).expect("the README")
}

/// The first fenced block in `language` after `marker`.
fn block_after<'a>(readme: &'a str, marker: &str, language: &str) -> &'a str {
    let at = readme
        .find(marker)
        .unwrap_or_else(|| panic!("the README has no {marker:?}"));
    let rest = &readme[at..];
    let fence = format!("```{language}\n");
    let open = rest
        .find(&fence)
        .unwrap_or_else(|| panic!("no {language} block after {marker:?}"))
        + fence.len();
    let close = rest[open..].find("```").expect("a closing fence");
    &rest[open..open + close]
}

/// A block's shell commands, without their comments.
fn commands(block: &str) -> Vec<String> {
    block
        .lines()
        .map(|line| line.split(" #").next().unwrap_or(line).trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

/// The word after `flag` in a command.
fn flag_value<'a>(command: &'a str, flag: &str) -> &'a str {
    let words: Vec<&str> = command.split_whitespace().collect();
    let at = words
        .iter()
        .position(|word| *word == flag)
        .unwrap_or_else(|| panic!("no {flag} in {command:?}"));
    words[at + 1]
}

/// `command` run by `sh` in `dir`, with this build's `ltx` first on `PATH`.
fn shell(command: &str, dir: &Path) -> Command {
    let build = Path::new(env!("CARGO_BIN_EXE_ltx"))
        .parent()
        .expect("the binary's directory")
        .to_path_buf();
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(build).chain(std::env::split_paths(&inherited)))
            .expect("a PATH");
    let mut shell = Command::new("sh");
    shell
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    shell
}

/// Waits for a child, killing it if it outlives `bound`.
fn finish(mut child: Child, bound: Duration) -> Output {
    let deadline = Instant::now() + bound;
    while child.try_wait().expect("polling a child").is_none() {
        if Instant::now() > deadline {
            child.kill().expect("killing a hung child");
            panic!("a child outlived {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("the child's output")
}

/// Runs `command` to its end and checks that it succeeded.
fn run(command: &str, dir: &Path, bound: Duration) -> Output {
    let child = shell(command, dir)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {command:?}: {e}"));
    let output = finish(child, bound);
    assert!(
        output.status.success(),
        "{command:?}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A background process, killed if the test ends before it does.
struct Background(Option<Child>);

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A UDP port on 127.0.0.1 that was free a moment ago.
fn free_port() -> u16 {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a probe socket");
    socket.local_addr().expect("its address").port()
}

#[test]
fn the_files_quick_start_delivers_the_file_it_sends() {
    let readme = readme();
    let lines = commands(block_after(
        &readme,
        "**Files between two machines.**",
        "sh",
    ));
    // A key pair, the receiver (terminal 1), the sender (terminal 2).
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].starts_with("ltx keygen "), "{lines:?}");
    assert!(lines[1].starts_with("ltx recv ") && lines[1].contains("--once"));
    assert!(lines[2].starts_with("ltx send "), "{lines:?}");
    let address = "127.0.0.1:7000";
    assert!(lines[1].contains(address) && lines[2].contains(address));

    let dir = tempfile::tempdir().expect("a temporary directory");
    let sent = lines[2].split_whitespace().nth(2).expect("the file sent");
    std::fs::copy(repository_file(sent), dir.path().join(sent)).expect("the file to send");
    let port = free_port().to_string();
    let lines: Vec<String> = lines
        .iter()
        .map(|line| line.replace(address, &format!("127.0.0.1:{port}")))
        .collect();

    run(&lines[0], dir.path(), Duration::from_secs(30));
    // `exec`, so that the child is the receiver itself and a kill reaches it.
    let mut receiver = shell(&format!("exec {}", lines[1]), dir.path())
        .spawn()
        .expect("starting the receiver");
    let mut stderr = BufReader::new(receiver.stderr.take().expect("piped"));
    let mut receiver = Background(Some(receiver));
    // Its first line says where it listens: it is bound.
    let mut first = String::new();
    stderr
        .read_line(&mut first)
        .expect("the receiver's first line");
    assert!(first.contains(&port), "{first}");
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));

    run(&lines[2], dir.path(), Duration::from_secs(120));
    let done = finish(receiver.0.take().expect("running"), Duration::from_secs(60));
    assert!(done.status.success(), "the receiver: {}", done.status);

    let stored = dir.path().join(flag_value(&lines[1], "--dir")).join(sent);
    assert_eq!(
        std::fs::read(&stored).expect("the file received"),
        std::fs::read(dir.path().join(sent)).expect("the file sent"),
        "{} differs from what was sent",
        stored.display()
    );
}

#[test]
fn the_simulator_quick_start_runs_and_delivers() {
    let readme = readme();
    let lines = commands(block_after(&readme, "**Simulator.**", "sh"));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("ltx sim run "), "{lines:?}");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let output = run(&lines[0], dir.path(), Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("completed in"), "{stdout}");
    assert!(stdout.contains("verified: true"), "{stdout}");
}

#[test]
fn the_library_example_is_the_echo_client_example() {
    let readme = readme();
    let shown = block_after(&readme, "**Library.**", "rust");
    let example = std::fs::read_to_string(repository_file("crates/ltx/examples/echo_client.rs"))
        .expect("the example");
    // The example is the README's code under a header, formatted.
    let code: Vec<&str> = example
        .lines()
        .skip_while(|line| line.starts_with("//!") || line.is_empty())
        .collect();
    let tokens = |text: &str| text.split_whitespace().collect::<String>();
    assert_eq!(
        tokens(shown),
        tokens(&code.join("\n")),
        "the README's library example and crates/ltx/examples/echo_client.rs differ"
    );
}
