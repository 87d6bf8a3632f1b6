//! The docs cannot drift from the binary: every `h3lab` command they show
//! parses, the README names every command, and the figures the binary
//! prints (presets, their cells and estimated minutes) are either
//! generated into the README from it or checked against it.
//!
//! `UPDATE_DOCS=1 cargo test -p h3lab docs_drift` rewrites the generated
//! part of the README; without it, a difference fails the test.

use std::path::{Path, PathBuf};

use clap::error::{ContextKind, ErrorKind};
use clap::{CommandFactory, Parser};
use h3lab_bench::presets;

const TABLE_START: &str =
    "<!-- generated from `h3lab bench --list` by `UPDATE_DOCS=1 cargo test -p h3lab docs_drift` -->";
const TABLE_END: &str = "<!-- end of generated table -->";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README, docs/ and every crate's and the npm package's README.
fn documents() -> Vec<(PathBuf, String)> {
    let root = repository();
    let mut paths = vec![root.join("README.md"), root.join("node/README.md")];
    for dir in ["docs", "crates"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|ext| ext == "md") {
                paths.push(path);
            } else if path.join("README.md").is_file() {
                paths.push(path.join("README.md"));
            }
        }
    }
    paths.sort();
    (paths.into_iter())
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let shown = path.strip_prefix(&root).unwrap_or(&path).to_path_buf();
            (shown, text)
        })
        .collect()
}

/// The presets as a Markdown table: name, cells, the estimate, what each
/// is and what it needs beyond root.
fn preset_table() -> String {
    let mut table = String::from(
        "| preset | cells | estimated | what it is | needs, beyond root |\n\
         | --- | --- | --- | --- | --- |\n",
    );
    for preset in presets::summaries().unwrap() {
        table.push_str(&format!(
            "| `{}` | {} | about {} min | {} | {} |\n",
            preset.name,
            preset.cells,
            preset.minutes,
            preset.headline(),
            preset.needs().unwrap_or("nothing more"),
        ));
    }
    table
}

#[test]
fn the_readmes_preset_table_is_what_bench_list_prints() {
    let path = repository().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = readme
        .find(TABLE_START)
        .expect("README has the preset table's start mark")
        + TABLE_START.len()
        + 1;
    let end = readme
        .find(TABLE_END)
        .expect("README has the preset table's end mark");
    let table = preset_table();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(
            &path,
            format!("{}{table}{}", &readme[..start], &readme[end..]),
        )
        .unwrap();
        return;
    }
    assert_eq!(
        readme[start..end],
        table,
        "README's preset table differs from `h3lab bench --list`; \
         run `UPDATE_DOCS=1 cargo test -p h3lab docs_drift` and read the change"
    );
}

/// "N cells, about M min" is how the binary states a preset's size; the
/// docs say it only next to the preset's name, in backticks, and only
/// with the binary's figures. A run's measured time is written otherwise.
#[test]
fn every_preset_estimate_in_the_docs_is_the_binarys() {
    let summaries = presets::summaries().unwrap();
    let mut wrong = Vec::new();
    let mut seen = 0;
    for (path, text) in documents() {
        for (at, _) in text.match_indices(" cells, about ") {
            seen += 1;
            let before = &text[..at];
            let cells = before.rsplit(|c: char| !c.is_ascii_digit()).next().unwrap();
            let minutes: String = (text[at + " cells, about ".len()..].chars())
                .take_while(char::is_ascii_digit)
                .collect();
            // The last word of the last inline code close before it.
            let named = (before.rsplit('`').nth(1))
                .filter(|_| before.len() - before.rfind('`').unwrap_or(0) < 40)
                .and_then(|code| code.split_whitespace().last());
            let matches = named.and_then(|name| summaries.iter().find(|p| p.name == name));
            match matches {
                Some(p) if p.cells.to_string() == cells && p.minutes.to_string() == minutes => {}
                _ => wrong.push(format!(
                    "{}: `{:?}` with {cells} cells, about {minutes} min",
                    path.display(),
                    named
                )),
            }
        }
    }
    assert!(seen > 0, "the README states no preset's size");
    assert!(
        wrong.is_empty(),
        "preset sizes that are not what `h3lab bench --list` prints \
         (name the preset in backticks just before): {wrong:#?}"
    );
}

/// Every `h3lab ...` command in the docs, in shell blocks and inline code,
/// parses with today's flags and values. Naming a command without its
/// required arguments (`h3lab probe`) or a flag without its value
/// (`h3lab serve --site`) is a mention, not an error, and so is a
/// placeholder in capitals (`--proto PROTO`).
#[test]
fn every_h3lab_command_in_the_docs_parses() {
    let mut failures = Vec::new();
    let mut parsed = 0;
    for (path, text) in documents() {
        for (line, command) in commands_in(&text) {
            parsed += 1;
            if let Err(err) = super::Cli::try_parse_from(&command) {
                if !is_a_mention(&err, &command) {
                    let first = err.to_string().lines().next().unwrap_or("").to_string();
                    failures.push(format!(
                        "{}:{line}: `{}`: {first}",
                        path.display(),
                        command.join(" ")
                    ));
                }
            }
        }
    }
    assert!(
        parsed > 300,
        "found only {parsed} h3lab commands in the docs"
    );
    assert!(
        failures.is_empty(),
        "{} of {parsed} commands in the docs do not parse:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn is_a_mention(err: &clap::Error, command: &[String]) -> bool {
    let placeholder = |value: &str| {
        value.chars().filter(char::is_ascii_uppercase).count() >= 2
            && (value.chars()).all(|c| c.is_ascii_uppercase() || ":_-.,".contains(c))
    };
    match err.kind() {
        ErrorKind::MissingRequiredArgument
        | ErrorKind::MissingSubcommand
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        | ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion => true,
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let value = err.get(ContextKind::InvalidValue).map(|v| v.to_string());
            match value.as_deref() {
                None | Some("") => command.last().is_some_and(|w| w.starts_with('-')),
                Some(value) => placeholder(value),
            }
        }
        _ => false,
    }
}

/// The `h3lab` commands in a Markdown text with the line each starts on:
/// in shell blocks (unlabelled, `sh`, `bash`, `console`; lines joined at
/// a trailing `\`) and in a paragraph's inline code, also inside quoted
/// arguments (`--server-cmd 'h3lab serve ...'`).
fn commands_in(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut commands = Vec::new();
    let mut block: Option<bool> = None;
    let mut pending = String::new();
    let mut paragraph = (0, String::new());
    let flush = |(line, prose): &mut (usize, String), commands: &mut Vec<_>| {
        for code in prose.split('`').skip(1).step_by(2) {
            commands.extend(invocations(code).into_iter().map(|c| (*line, c)));
        }
        prose.clear();
    };
    for (index, line) in text.lines().enumerate() {
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            flush(&mut paragraph, &mut commands);
            block = match block {
                Some(_) => None,
                None => Some(["", "sh", "bash", "shell", "console"].contains(&fence.trim())),
            };
            continue;
        }
        match block {
            Some(true) => {
                if let Some(head) = line.strip_suffix('\\') {
                    pending.push_str(head);
                    continue;
                }
                pending.push_str(line);
                let shell = std::mem::take(&mut pending);
                commands.extend(invocations(&shell).into_iter().map(|c| (index + 1, c)));
            }
            Some(false) => {}
            None if line.trim().is_empty() => flush(&mut paragraph, &mut commands),
            None => {
                if paragraph.1.is_empty() {
                    paragraph.0 = index + 1;
                }
                paragraph.1.push_str(line);
                paragraph.1.push(' ');
            }
        }
    }
    flush(&mut paragraph, &mut commands);
    commands
}

/// The `h3lab` invocations in one shell line, each up to the shell
/// operator or comment that ends it, with an elision (`...`) left out and
/// the emulated path's addresses (`$H3LAB_SERVER_IP`) filled in.
fn invocations(shell: &str) -> Vec<Vec<String>> {
    let shell = shell
        .replace("$H3LAB_SERVER_IP", "10.0.0.1")
        .replace("$H3LAB_CLIENT_IP", "10.0.0.2");
    let Some(words) = shlex::split(&shell) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (at, word) in words.iter().enumerate() {
        if word.contains(' ') {
            found.extend(invocations(word));
        }
        // `cargo test -p h3lab` names the package, not the binary.
        let package = at > 0 && ["-p", "--package", "cargo"].contains(&words[at - 1].as_str());
        if word != "h3lab" || package {
            continue;
        }
        let command: Vec<String> = (words[at..].iter())
            .take_while(|w| !is_shell_operator(w))
            .filter(|w| !["...", "…"].contains(&w.as_str()))
            .cloned()
            .collect();
        found.push(command);
    }
    found
}

fn is_shell_operator(word: &str) -> bool {
    word.starts_with('#')
        || word.starts_with('>')
        || word.starts_with("2>")
        || ["|", "||", "&", "&&", ";", "<"].contains(&word)
}

/// The README's command table names every command, down to each of
/// `probe`'s, `site`'s, `net`'s... subcommands.
#[test]
fn the_readme_names_every_command() {
    let readme = std::fs::read_to_string(repository().join("README.md")).unwrap();
    let cli = super::Cli::command();
    let mut missing = Vec::new();
    for command in cli.get_subcommands() {
        let mut paths = vec![command.get_name().to_string()];
        paths.extend(
            (command.get_subcommands())
                .map(|sub| format!("{} {}", command.get_name(), sub.get_name())),
        );
        for path in paths {
            if !readme.contains(&format!("h3lab {path}")) {
                missing.push(path);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the README never shows `h3lab {missing:?}`"
    );
}
