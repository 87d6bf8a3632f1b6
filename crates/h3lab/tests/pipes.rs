//! Output into a pipe whose reader has gone (`h3lab ... | head -1`): the
//! command prints nothing more and ends normally, with no panic message.

mod common;

use std::process::{Command, Stdio};

use common::EXE;

/// Runs h3lab with `args`, its stdout a pipe nobody reads any more (the
/// read end is closed before the command writes), and returns its exit
/// status and stderr.
fn run_into_closed_pipe(args: &[&str]) -> (std::process::ExitStatus, String) {
    let (reader, writer) = nix::unistd::pipe().unwrap();
    drop(reader);
    let output = Command::new(EXE)
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        output.status,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn commands_piped_into_a_closed_reader_end_quietly() {
    let site = tempfile::tempdir().unwrap();
    let out = site.path().join("small");
    let commands: [&[&str]; 5] = [
        &["bench", "--preset", "study-a", "--dry-run"],
        &["bench", "--list"],
        &["bench", "--show", "default"],
        &["net", "profiles"],
        &["site", "gen", "small", "--out", out.to_str().unwrap()],
    ];
    for args in commands {
        let (status, stderr) = run_into_closed_pipe(args);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "h3lab {args:?}: {stderr}"
        );
        assert!(status.success(), "h3lab {args:?} exited {status}: {stderr}");
    }
    assert!(
        out.join("index.html").is_file(),
        "the command itself ran to its end"
    );
}
