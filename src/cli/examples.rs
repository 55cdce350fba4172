//! Examples under each command's `--help`: a newcomer reads the help of a command to learn
//! how it is called, and a list of flags alone does not show which ones go together. The
//! examples live in one table, attached to the parsed command tree, so a test can parse every
//! one of them: an example that stops parsing (a renamed flag) fails the build's tests instead
//! of misleading the reader.

use clap::Command;

/// One example: the command line, and what it does.
type Example = (&'static str, &'static str);

/// The top-level help's examples: the first commands README's "Start here" runs.
const START: &[Example] = &[
    ("docdex index", "index the repository you are in (incremental; progress on a terminal)"),
    ("docdex search \"where are sessions expired\"", "ranked hits with line ranges"),
    ("docdex status", "is the index ready, and what it holds"),
    ("docdex COMMAND --help", "each command's options, with examples"),
];

/// Examples per top-level command (by its name), in the order of `docdex --help`.
pub const EXAMPLES: &[(&str, &[Example])] = &[
    (
        "tui",
        &[
            ("docdex tui", "the workbench on the repository you are in"),
            ("docdex tui --repo ../api", "on another repository"),
        ],
    ),
    (
        "index",
        &[
            ("docdex index", "the repository you are in: only what changed since the last run"),
            ("docdex index --repo ../api --json", "another repository, the summary as JSON"),
            ("docdex index --rebuild", "from scratch, beside the current index (which keeps answering)"),
        ],
    ),
    (
        "search",
        &[
            ("docdex search \"where are sessions expired\"", "a plain-language description"),
            ("docdex search parse_config --lang rust -n 5", "an identifier, Rust files only, five hits"),
            ("docdex search \"retry policy\" --path src/net --json", "under one folder, as JSON"),
        ],
    ),
    (
        "chat",
        &[
            ("docdex chat \"how is a session expired?\"", "one question, the answer streamed with sources"),
            ("docdex chat --diff=staged \"what could this change break?\"", "with the staged diff in the context"),
            ("docdex chat", "a session: one question per line on stdin"),
        ],
    ),
    (
        "symbols",
        &[
            ("docdex symbols SessionStore", "where a symbol is defined (exact, prefix, fuzzy)"),
            ("docdex symbols --file src/auth/session.rs", "a file's outline"),
            ("docdex symbols parse --kind function --json", "functions only, as JSON"),
        ],
    ),
    (
        "impact",
        &[
            ("docdex impact src/auth/session.rs", "its imports and importers"),
            ("docdex impact src/auth/session.rs --depth 3 --direction in", "everything that may break if it changes"),
            ("docdex impact src/auth/session.rs --tests", "the test files that exercise it"),
            ("docdex impact diagnostics", "imports that could not be resolved"),
        ],
    ),
    (
        "context",
        &[
            ("docdex context \"make sessions expire after a day\"", "a cited pack for the task, in Markdown"),
            (
                "docdex context \"fix the retry loop\" --since main --budget 4000 --json",
                "the branch's changes since main",
            ),
        ],
    ),
    (
        "get",
        &[
            ("docdex get src/auth/session.rs --lines 10-40", "lines 10 to 40 with their numbers"),
            ("docdex get src/auth/session.rs:10-40", "the same, from a hit's citation"),
            ("docdex get docs/spec.pdf --page 3", "one page of a PDF's text"),
        ],
    ),
    (
        "status",
        &[
            ("docdex status", "the repository you are in"),
            ("docdex status --repo ../api --json", "another one, as JSON"),
        ],
    ),
    (
        "watch",
        &[("docdex watch", "keep the index fresh until Ctrl-C"), ("docdex watch --json", "one JSON line per batch")],
    ),
    (
        "memory",
        &[
            ("docdex memory store \"deploys go through staging first\"", "remember a note"),
            ("docdex memory recall \"how do we deploy\"", "the notes closest in meaning"),
            ("docdex memory list -n 20", "the newest twenty"),
            ("docdex memory delete 3f2a9c", "forget one by its id's first characters"),
        ],
    ),
    (
        "profile",
        &[
            ("docdex profile list", "the agents and their preference counts"),
            (
                "docdex profile add --agent reviewer \"prefer early returns\"",
                "teach an agent a preference (its category read from the words, or -c style)",
            ),
            ("docdex profile search --agent reviewer \"error handling\"", "what it remembers about a topic"),
        ],
    ),
    (
        "map",
        &[
            ("docdex map", "the default agent's project map"),
            ("docdex map --agent reviewer --json", "another agent's, as JSON"),
        ],
    ),
    ("similar", &[("docdex similar src/auth/session.rs -n 5", "the five files most like it")]),
    (
        "run-tests",
        &[
            ("docdex run-tests", "every suite the repository holds"),
            ("docdex run-tests --target tests/test_sessions.py", "one test file"),
            ("docdex run-tests --affected --since main --json", "only the tests the branch's changes reach"),
        ],
    ),
    (
        "eval",
        &[
            ("docdex eval", "score search on queries from the git history"),
            ("docdex eval -n 100 --compare search.fusion=rrf", "against a second setting"),
        ],
    ),
    (
        "serve",
        &[
            ("docdex serve", "HTTP and MCP on 127.0.0.1:3210 for the repository you are in"),
            ("docdex serve --repo ../api --port 3300", "another repository, on 127.0.0.1:3300"),
        ],
    ),
    (
        "daemon",
        &[
            ("docdex daemon", "one server for many repositories"),
            ("docdex daemon status", "is one running, and where"),
            ("docdex daemon stop", "stop it"),
        ],
    ),
    (
        "mcp",
        &[
            ("docdex mcp --repo ~/src/app", "MCP over stdio, tools defaulting to one repository"),
            ("docdex --home ~/.docdex-work mcp --agent reviewer", "another home, and the agent asking"),
        ],
    ),
    (
        "hook",
        &[
            ("docdex hook install --agent reviewer", "check each commit against that agent's rules"),
            ("docdex hook uninstall", "remove the hook"),
        ],
    ),
    (
        "repo",
        &[
            ("docdex repo list", "the known repositories (a moved or deleted one is marked MISSING)"),
            ("docdex repo remove ../old-app --purge", "forget one and delete its index (its memories only with --yes)"),
            (
                "docdex repo move ~/src/app ~/work/app",
                "the folder moved: carry its index, memories and chat sessions along",
            ),
        ],
    ),
    ("add", &[("docdex add ~/notes --include '*.md'", "a folder outside the repository, searched with it")]),
    ("sources", &[("docdex sources", "the registered folders, their files and sizes")]),
    ("remove-source", &[("docdex remove-source notes", "by name (or its path); its files leave the index")]),
    (
        "completions",
        &[
            ("docdex completions bash", "a bash script: save it as ~/.local/share/bash-completion/completions/docdex"),
            ("docdex completions zsh", "a zsh script: save it as _docdex in a folder of your $fpath"),
            ("docdex completions fish", "a fish script: save it as ~/.config/fish/completions/docdex.fish"),
        ],
    ),
    (
        "config",
        &[
            ("docdex config", "where the config and state are, and every setting"),
            ("docdex config --json", "the same as JSON"),
        ],
    ),
    (
        "check",
        &[
            ("docdex check", "is this machine ready"),
            ("docdex check --repo . --json", "and this repository's index, as JSON"),
        ],
    ),
    ("llm-list", &[("docdex llm-list", "models that fit this machine, and which are installed")]),
    (
        "llm-setup",
        &[
            ("docdex llm-setup", "what it would do: nothing is downloaded"),
            ("docdex llm-setup --yes", "pull the recommended models and point [llm] at them"),
        ],
    ),
    ("graph", &[("docdex graph cycles", "import cycles"), ("docdex graph rebuild", "re-parse the imports")]),
    ("symbols-status", &[("docdex symbols-status --json", "symbol counts per language and parser drift")]),
    (
        "ast",
        &[
            ("docdex ast search --kinds function_item,impl_item", "files holding those node kinds"),
            ("docdex ast query --kinds call_expression --path src/net", "counts and sample nodes under a folder"),
        ],
    ),
    (
        "audit",
        &[
            ("docdex audit duplicates", "exact and near-duplicate chunks"),
            ("docdex audit conflicts --no-model -n 10", "documentation that disagrees with itself"),
        ],
    ),
    (
        "dag",
        &[
            ("docdex dag list", "the newest chat sessions"),
            ("docdex dag view 3f2a --format dot", "one session as Graphviz DOT"),
        ],
    ),
    ("web-search", &[("docdex web-search \"tantivy fuzzy query\"", "titles, URLs and snippets")]),
    ("web-fetch", &[("docdex web-fetch https://docs.rs/tantivy", "a page as Markdown")]),
    ("web-rag", &[("docdex web-rag \"how do I page tantivy results?\"", "local context plus web passages")]),
    ("browser", &[("docdex browser list", "the browsers found"), ("docdex browser install", "how to install one")]),
    (
        "libs",
        &[
            ("docdex libs fetch", "docs of the dependencies the lockfiles pin"),
            ("docdex libs fetch --offline", "installed sources only"),
            ("docdex libs list", "what was ingested"),
        ],
    ),
];

/// `command` with the examples under its help and under each of its commands' help, after
/// what a command's help already ends with (`run-tests`' exit codes).
pub fn attach(command: Command) -> Command {
    EXAMPLES.iter().fold(command.after_help(render(START)), |cmd, (name, examples)| {
        cmd.mut_subcommand(*name, |sub| {
            let text = match sub.get_after_help() {
                Some(own) => format!("{own}\n\n{}", render(examples)),
                None => render(examples),
            };
            sub.after_help(text)
        })
    })
}

/// The examples as a help section: each command line, its description indented below.
fn render(examples: &[Example]) -> String {
    let mut text = String::from("Examples:");
    for (line, what) in examples {
        text.push_str(&format!("\n  {line}\n      {what}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// A command line split as a POSIX shell would split these examples: words, and single or
    /// double quoted strings (no escapes or expansions are used in them).
    fn words(line: &str) -> Vec<String> {
        let (mut out, mut cur, mut quote, mut started) = (Vec::new(), String::new(), None, false);
        for c in line.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), c) => cur.push(c),
                (None, '"' | '\'') => (quote, started) = (Some(c), true),
                (None, ' ') => {
                    if started || !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                    }
                    started = false;
                }
                (None, c) => cur.push(c),
            }
        }
        if started || !cur.is_empty() {
            out.push(cur);
        }
        out
    }

    #[test]
    fn every_example_parses_as_the_command_it_is_shown_under() {
        let command = attach(crate::cli::Cli::command());
        for (name, examples) in EXAMPLES {
            assert!(command.find_subcommand(name).is_some(), "examples for an unknown command {name}");
            for (line, _) in examples.iter() {
                let args = words(line);
                assert_eq!(args[0], "docdex", "{line}");
                let first = args.iter().skip(1).find(|a| !a.starts_with('-') && !a.contains('/')).cloned();
                assert_eq!(first.as_deref(), Some(*name), "{line} is shown under {name}");
                if let Err(e) = command.clone().try_get_matches_from(&args) {
                    panic!("example `{line}` does not parse:\n{e}");
                }
            }
        }
        assert_eq!(words("docdex search \"a b\" --path 'x y'"), ["docdex", "search", "a b", "--path", "x y"]);
    }

    #[test]
    fn every_command_a_newcomer_runs_has_examples_in_its_help() {
        let mut command = attach(crate::cli::Cli::command());
        let shown: Vec<String> = command
            .get_subcommands()
            .filter(|c| !c.is_hide_set() && !c.get_name().starts_with("bench") && c.get_name() != "help")
            .map(|c| c.get_name().to_string())
            .collect();
        for name in shown {
            assert!(EXAMPLES.iter().any(|(n, _)| *n == name), "`docdex {name} --help` has no examples");
        }
        let help = command.render_help().to_string();
        assert!(help.contains("Examples:\n  docdex index\n"), "{help}");
        let search =
            command.find_subcommand_mut("search").map(|c| c.render_long_help().to_string()).unwrap_or_default();
        assert!(search.contains("docdex search parse_config --lang rust -n 5"), "{search}");
    }
}
