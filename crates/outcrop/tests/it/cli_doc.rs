//! docs/cli.md's last section is every command's `--help`, exactly: this test runs the binary
//! for each command and subcommand (found by walking the `Commands:` lists, so a new command
//! cannot be left out) and compares. `OUTCROP_BLESS=1` rewrites the section instead.

use std::path::Path;
use std::process::Command;

const HEADING: &str = "## Every command's `--help`";

fn help(path: &[String]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(path)
        .arg("--help")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(o.status.success(), "{path:?} --help failed");
    String::from_utf8(o.stdout).unwrap()
}

/// The subcommands a help text lists under `Commands:` (not `help`).
fn subcommands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line == "Commands:" {
            inside = true;
        } else if inside {
            // an entry is indented two spaces; its wrapped description more
            match line.strip_prefix("  ") {
                Some(rest) if !rest.starts_with(' ') => {
                    let name = rest.split_whitespace().next().unwrap_or("");
                    if name != "help" && !name.is_empty() {
                        out.push(name.to_string());
                    }
                }
                Some(_) => {}
                None => inside = false,
            }
        }
    }
    out
}

/// The section as it should read: each command's help in the order the binary lists them.
fn reference() -> String {
    let mut s = format!(
        "{HEADING}\n\nGenerated from the binary (`OUTCROP_BLESS=1 cargo test -p outcrop --test it cli_doc::`); \
         checked by that test.\n"
    );
    let mut queue: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = queue.pop() {
        let text = help(&path);
        let name = std::iter::once("outcrop".to_string())
            .chain(path.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        s += &format!("\n### `{name}`\n\n```text\n{}\n```\n", text.trim_end());
        // depth first, in the listed order
        for sub in subcommands(&text).into_iter().rev() {
            let mut p = path.clone();
            p.push(sub);
            queue.push(p);
        }
    }
    s
}

#[test]
fn the_cli_page_holds_every_commands_help_exactly() {
    let page = outcrop_testkit::root().join("docs/cli.md");
    let text = std::fs::read_to_string(&page).unwrap();
    let (before, _) = text.split_once(HEADING).unwrap_or((&text, ""));
    let want = format!(
        "{}{}",
        before.trim_end_matches('\n').to_string() + "\n\n",
        reference()
    );
    if std::env::var_os("OUTCROP_BLESS").is_some() {
        std::fs::write(&page, &want).unwrap();
        return;
    }
    if text != want {
        let line = text
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| text.lines().count().min(want.lines().count()));
        panic!(
            "docs/cli.md differs from the binary's --help from line {}: `{}` where the binary says `{}`; \
             run OUTCROP_BLESS=1 cargo test -p outcrop --test it cli_doc:: and review the change",
            line + 1,
            text.lines().nth(line).unwrap_or("(end)"),
            want.lines().nth(line).unwrap_or("(end)")
        );
    }
}

#[test]
fn subcommands_are_read_from_the_commands_list() {
    let t = "Usage: x\n\nCommands:\n  record  Record it\n          wrapped\n  report  Report\n  help    Print\n\nOptions:\n  -h\n";
    assert_eq!(subcommands(t), ["record", "report"]);
}

#[test]
fn the_readme_is_a_short_front_door_that_links_every_document() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 150,
        "README.md has {lines} lines; the manuals belong in docs/"
    );
    // every document is in the table, and every link leads somewhere
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            assert!(
                readme.contains(&format!("(docs/{name})")),
                "docs/{name} is not linked from README.md's table"
            );
        }
    }
    for link in readme.split("](").skip(1) {
        let target = link.split(')').next().unwrap();
        assert!(
            root.join(target).exists(),
            "README.md links to {target}, which does not exist"
        );
    }
}
