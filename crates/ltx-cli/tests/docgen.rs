//! `ltx completions` and `ltx man`: generated from the command line, so
//! they name its newest commands and flags.

use std::process::Command;

fn ltx() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ltx"))
}

#[test]
fn completions_know_every_command_in_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = ltx()
            .args(["completions", shell])
            .output()
            .expect("ltx runs");
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = String::from_utf8_lossy(&out.stdout);
        for word in ["tunnel", "plot", "qlog", "stats-interval"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    let out = ltx()
        .args(["completions", "tcsh"])
        .output()
        .expect("ltx runs");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn manual_pages_cover_every_subcommand() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out_dir = dir.path().join("man1");
    let out = ltx()
        .args(["man", "--out"])
        .arg(&out_dir)
        .output()
        .expect("ltx runs");
    assert!(out.status.success(), "{out:?}");
    for (page, word) in [
        ("ltx.1", "tunnel"),
        ("ltx-send.1", "\\-\\-peer"),
        ("ltx-recv.1", "\\-\\-metrics"),
        ("ltx-tunnel-server.1", "\\-\\-permit"),
        ("ltx-sim-run.1", "\\-\\-plot"),
    ] {
        let text = std::fs::read_to_string(out_dir.join(page)).expect(page);
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page}");
        assert!(text.contains(word), "{page}: no {word}");
    }
}
