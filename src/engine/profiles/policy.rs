//! docdex's own judgement of a preference, without a model: is it harmful (spec 001 §8.3's
//! "bad apple"), does it contradict itself or a rule the agent keeps, which category does it
//! read as, and does a chat message carry a preference at all. The evolution pipeline applies
//! these before and after the model decides, so a refusal never depends on the model agreeing.

use super::types::{Category, Preference};

/// What a harmful preference asks to switch off or bypass, with the reason given.
const HARMFUL_TARGETS: &[(&[&str], &str)] = &[
    (&["lint", "linter", "linters", "linting", "eslint", "clippy", "pylint"], "it turns off linting"),
    (&["test", "tests", "testing"], "it turns off tests"),
    (&["type", "typecheck", "typechecking", "tsc", "mypy"], "it turns off type checking"),
    (&["security", "safety", "warning", "warnings", "audit", "sast"], "it silences security or safety checks"),
    (
        &[
            "ssl",
            "tls",
            "certificate",
            "certificates",
            "verification",
            "verify",
            "csrf",
            "cors",
            "auth",
            "authentication",
        ],
        "it switches off a security control",
    ),
    (&["review", "reviews", "ci", "pipeline", "hook", "hooks", "checks"], "it bypasses review or CI"),
];

/// Verbs that switch something off.
const DISABLING: &[&str] = &[
    "disable",
    "disabled",
    "disabling",
    "skip",
    "skipping",
    "ignore",
    "ignoring",
    "suppress",
    "silence",
    "bypass",
    "remove",
    "delete",
    "turn",
    "comment",
];

const NEGATIONS: &[&str] = &["never", "not", "don't", "dont", "no", "avoid", "without"];

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-' || c == '.' || c == '/' || c == '@'))
        .map(|w| w.trim_matches(|c: char| c == '.' || c == '\'' || c == '-').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Why a preference is harmful, if it is: it switches off linting, tests, type checks, security
/// controls or review, bypasses commit hooks, or puts secrets in the repository. "Never disable
/// the linter" is not harmful: a negation just before the verb turns it around.
pub fn harmful(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    if lower.contains("--no-verify") || lower.contains("no-verify") {
        return Some("harmful: it bypasses commit hooks (--no-verify)".into());
    }
    if lower.contains("chmod 777") || lower.contains("chmod -r 777") {
        return Some("harmful: it makes files writable by everyone (chmod 777)".into());
    }
    let w = words(text);
    let negated_before = |i: usize| w[i.saturating_sub(3)..i].iter().any(|x| NEGATIONS.contains(&x.as_str()));
    for (i, word) in w.iter().enumerate() {
        if !DISABLING.contains(&word.as_str()) || negated_before(i) {
            continue;
        }
        // "turn off", "comment out": the particle is part of the verb.
        if (word == "turn" && w.get(i + 1).is_none_or(|n| n != "off"))
            || (word == "comment" && w.get(i + 1).is_none_or(|n| n != "out"))
        {
            continue;
        }
        let window = &w[i + 1..(i + 7).min(w.len())];
        for (targets, why) in HARMFUL_TARGETS {
            if window.iter().any(|x| targets.contains(&x.as_str())) {
                return Some(format!("harmful: {why}"));
            }
        }
    }
    let is_secret = |x: &String| {
        matches!(
            x.as_str(),
            "secret"
                | "secrets"
                | "password"
                | "passwords"
                | "credential"
                | "credentials"
                | "token"
                | "tokens"
                | "key"
                | "keys"
        )
    };
    for (i, word) in w.iter().enumerate() {
        let puts = matches!(word.as_str(), "commit" | "hardcode" | "hard-code" | "hardcoded" | "embed");
        if puts && !negated_before(i) && w[i + 1..(i + 6).min(w.len())].iter().any(is_secret) {
            return Some("harmful: it puts secrets into the repository".into());
        }
    }
    None
}

/// The packages or tools a text says to use, and the ones it says to avoid.
fn stances(text: &str) -> (Vec<String>, Vec<String>) {
    let w = words(text);
    let mut pro = Vec::new();
    let mut con = Vec::new();
    // Where the last "use X" / "prefer X" was: "prefer attrs over dataclasses" avoids what
    // follows "over" (a kept "prefer dataclasses" then contradicts it); "loop over items" does not.
    let mut last_pro: Option<usize> = None;
    for (i, word) in w.iter().enumerate() {
        let negated = w[i.saturating_sub(2)..i].iter().any(|x| NEGATIONS.contains(&x.as_str()) || x == "stop");
        let target = |j: usize| -> Option<String> {
            let mut j = j;
            while w.get(j).is_some_and(|x| matches!(x.as_str(), "the" | "a" | "using" | "of" | "usage")) {
                j += 1;
            }
            w.get(j)
                .filter(|x| x.len() >= 2 && !matches!(x.as_str(), "it" | "this" | "that" | "them"))
                .map(|x| x.strip_suffix(".js").filter(|b| !b.is_empty() && !b.contains('/')).unwrap_or(x).to_string())
        };
        match word.as_str() {
            "use" | "prefer" | "adopt" if !negated => {
                pro.extend(target(i + 1));
                last_pro = Some(i);
            }
            "use" | "using" | "import" | "importing" if negated => con.extend(target(i + 1)),
            "avoid" | "deprecate" | "ban" | "forbid" => con.extend(target(i + 1)),
            "over" if last_pro.is_some_and(|p| i - p <= 4) => con.extend(target(i + 1)),
            "instead" if w.get(i + 1).is_some_and(|x| x == "of") => con.extend(target(i + 2)),
            "rather" if w.get(i + 1).is_some_and(|x| x == "than") => con.extend(target(i + 2)),
            _ => {}
        }
    }
    (pro, con)
}

/// Whether two statements take opposite sides: one says to use what the other avoids, or only
/// one of them is negated ("use tabs" against "never use tabs for indentation"). Their words
/// can match closely while they say opposite things, so closeness alone never makes them the
/// same preference.
pub fn opposed(a: &str, b: &str) -> bool {
    let negated = |t: &str| words(t).iter().any(|w| NEGATIONS.contains(&w.as_str()));
    let ((ap, ac), (bp, bc)) = (stances(a), stances(b));
    negated(a) != negated(b) || ap.iter().any(|x| bc.contains(x)) || ac.iter().any(|x| bp.contains(x))
}

/// Why a statement contradicts itself ("use moment, but avoid moment"), if it does.
pub fn self_contradiction(text: &str) -> Option<String> {
    let (pro, con) = stances(text);
    pro.iter().find(|p| con.contains(p)).map(|p| format!("self-contradicting: it says both to use and to avoid {p}"))
}

/// Why a new preference contradicts one the agent keeps (other than the one it replaces).
pub fn contradicts_kept(
    content: &str,
    rule: Option<&str>,
    kept: &[Preference],
    replacing: Option<&str>,
) -> Option<String> {
    let (pro, con) = stances(content);
    let forbidden: Vec<String> =
        rule.and_then(|r| r.strip_prefix("forbid-import ")).map(|p| vec![p.trim().to_string()]).unwrap_or_default();
    for p in kept.iter().filter(|p| Some(p.id.as_str()) != replacing) {
        let (kp, kc) = stances(&p.content);
        let kept_forbids = p.rule.as_deref().and_then(|r| r.strip_prefix("forbid-import ")).map(str::trim);
        let clash = pro
            .iter()
            .find(|x| kc.contains(x) || kept_forbids == Some(x.as_str()))
            .or_else(|| con.iter().chain(forbidden.iter()).find(|x| kp.contains(x)));
        if let Some(x) = clash {
            return Some(format!(
                "contradicts preference {} (\"{}\") about {x}; update that one instead (docdex profile edit {})",
                p.id, p.content, p.id
            ));
        }
    }
    None
}

/// The category a statement reads as, when nobody said.
pub fn classify(text: &str) -> Category {
    let w = words(text);
    let has = |xs: &[&str]| w.iter().any(|x| xs.contains(&x.as_str()));
    if has(&["never", "avoid", "don't", "dont", "forbid", "ban", "deprecate", "must", "no"]) {
        return Category::Constraint;
    }
    if has(&[
        "before", "after", "first", "then", "step", "review", "commit", "commits", "pr", "release", "deploy", "plan",
    ]) {
        return Category::Workflow;
    }
    if has(&[
        "use",
        "using",
        "switch",
        "switching",
        "adopt",
        "migrate",
        "library",
        "framework",
        "tool",
        "package",
        "runner",
        "linter",
        "formatter",
        "vitest",
        "jest",
        "pnpm",
        "npm",
        "yarn",
    ]) {
        return Category::Tooling;
    }
    Category::Style
}

/// Words that open a question, or a request to the assistant, rather than a statement.
const ASKING: &[&str] = &[
    "why",
    "how",
    "what",
    "what's",
    "whats",
    "where",
    "when",
    "which",
    "who",
    "whom",
    "whose",
    "can",
    "could",
    "would",
    "should",
    "shall",
    "do",
    "does",
    "did",
    "is",
    "are",
    "was",
    "were",
    "will",
    "may",
    "might",
    "explain",
    "show",
    "tell",
    "describe",
    "find",
    "list",
    "give",
    "help",
    "summarize",
    "summarise",
    "compare",
    "walk",
];

/// True when some sentence of `text` asks something: it ends with `?`, or opens with a
/// question word or a request ("why do we use moment? explain the trade-offs", "show me where
/// we use redis"). Only the message's end was looked at, so such a message, which names a
/// preference's words, was learnt as a preference whenever no model could say otherwise.
pub fn asks(text: &str) -> bool {
    let lower = text.to_lowercase();
    let mut rest = lower.as_str();
    while !rest.trim().is_empty() {
        let end = rest.find(['.', '!', '?', '\n', ';']).unwrap_or(rest.len());
        let sentence = &rest[..end];
        if rest[end..].starts_with('?') {
            return true;
        }
        let w = words(sentence);
        let first = w.first().map_or("", String::as_str);
        // "Do not use lodash" instructs; "do we use lodash" asks.
        let instructs = first == "do" && w.get(1).is_some_and(|x| x == "not");
        if ASKING.contains(&first) && !instructs {
            return true;
        }
        rest = rest.get(end + 1..).unwrap_or("");
    }
    false
}

/// True when a chat message states a preference ("we're switching to vitest", "never use any
/// here", "I prefer tabs") rather than asking something (see [`asks`]).
pub fn carries_preference(text: &str) -> bool {
    let t = text.trim().to_lowercase();
    if t.is_empty() || t.len() > 2000 || asks(&t) {
        return false;
    }
    const MARKERS: &[&str] = &[
        "i prefer",
        "we prefer",
        "i'd prefer",
        "please always",
        "always use",
        "always write",
        "never use",
        "never write",
        "don't use",
        "do not use",
        "stop using",
        "we use ",
        "we're using",
        "we are using",
        "we are switching",
        "we're switching",
        "switch to ",
        "switching to ",
        "from now on",
        "remember that",
        "in this project we",
        "our convention",
        "we avoid",
        "please avoid",
        "please don't",
        "please do not",
        "prefer ",
        "we don't ",
        "we do not ",
    ];
    MARKERS.iter().any(|m| t.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harm_is_recognised_and_negation_turns_it_around() {
        for bad in [
            "Disable all linters",
            "Ignore safety warnings",
            "skip the tests when in a hurry",
            "commit with --no-verify to save time",
            "Turn off TLS certificate verification in the client",
            "hardcode the API key in config.ts",
            "comment out failing tests",
        ] {
            assert!(harmful(bad).is_some(), "{bad}");
        }
        for fine in [
            "Never disable the linter",
            "Do not skip tests",
            "Use vitest for unit tests",
            "Never commit secrets",
            "Avoid circular dependencies",
            "Remove dead code",
            "Turn the feature flag on in staging",
        ] {
            assert_eq!(harmful(fine), None, "{fine}");
        }
    }

    #[test]
    fn opposite_statements_are_told_apart_from_repeats() {
        assert!(opposed("use tabs", "Never use tabs for indentation"));
        assert!(opposed("use lodash", "Avoid lodash"));
        assert!(!opposed("prefer early returns", "Prefer early returns over nested ifs"));
        assert!(!opposed("don't use default exports", "never use default exports"));
    }

    #[test]
    fn contradictions_within_and_against_kept_rules() {
        assert!(self_contradiction("Use moment.js for dates but avoid moment").is_some());
        assert_eq!(self_contradiction("Use dayjs and avoid moment"), None);
        let kept = Preference {
            id: "p1".into(),
            agent_id: "a".into(),
            content: "Use lodash for collections".into(),
            category: Category::Tooling,
            rule: None,
            last_updated: 1,
            source: super::super::types::PreferenceSource::Manual,
            embedded: false,
        };
        let why = contradicts_kept("Deprecate lodash", Some("forbid-import lodash"), std::slice::from_ref(&kept), None);
        assert!(why.is_some_and(|w| w.contains("p1")));
        assert_eq!(
            contradicts_kept("Deprecate lodash", Some("forbid-import lodash"), std::slice::from_ref(&kept), Some("p1")),
            None
        );
        assert_eq!(contradicts_kept("Use vitest", None, std::slice::from_ref(&kept), None), None);
        // "X over Y", "X instead of Y", "never import Y" avoid Y.
        let dataclasses =
            Preference { id: "p2".into(), content: "prefer dataclasses over namedtuples".into(), ..kept.clone() };
        let why = contradicts_kept("prefer attrs over dataclasses", None, std::slice::from_ref(&dataclasses), None);
        assert!(why.is_some_and(|w| w.contains("p2") && w.contains("dataclasses")));
        assert!(contradicts_kept("use attrs instead of dataclasses", None, std::slice::from_ref(&dataclasses), None)
            .is_some());
        assert_eq!(
            contradicts_kept("prefer dataclasses over dicts", None, std::slice::from_ref(&dataclasses), None),
            None
        );
        let json = Preference { id: "p3".into(), content: "Use json from the standard library".into(), ..kept };
        assert!(contradicts_kept("From now on we never import json; we prefer orjson", None, &[json], None).is_some());
        assert_eq!(stances("loop over items with an iterator").1, Vec::<String>::new());
    }

    #[test]
    fn categories_and_preference_statements() {
        assert_eq!(classify("Never use any"), Category::Constraint);
        assert_eq!(classify("Write the test first, then the code"), Category::Workflow);
        assert_eq!(classify("We are switching to vitest"), Category::Tooling);
        assert_eq!(classify("Prefer short functions"), Category::Style);
        assert!(carries_preference("We are switching to vitest for this project."));
        assert!(carries_preference("From now on, never use default exports"));
        assert!(!carries_preference("Should I always use vitest?"));
        assert!(!carries_preference("How are sessions expired"));
        assert!(!carries_preference("Why do we use moment? Explain the trade-offs."));
        assert!(!carries_preference("Show me where we use redis"));
        assert!(!carries_preference("We use redis. How do I invalidate the user cache"));
        assert!(carries_preference("Use tabs. We prefer them over spaces!"));
        assert!(carries_preference("Do not use lodash; we use the standard library"));
    }
}
