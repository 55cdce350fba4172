//! The versions yarn.lock and pnpm-lock.yaml lock for the root package's direct dependencies,
//! read without a YAML parser: both files are written by their tools in one regular layout
//! (yarn v1's own format, yarn berry's and pnpm's YAML subsets), and docdex needs one scalar
//! per dependency. A layout this reader does not know gives `None`, and the dependency falls
//! back to `node_modules` as before.

/// One meaningful line: its indentation, its key (unquoted) and its value (unquoted, empty for
/// a key that opens a block).
struct Line<'a> {
    indent: usize,
    key: &'a str,
    value: &'a str,
}

fn unquote(s: &str) -> &str {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    s
}

/// `key: value`, `key:`, `"quoted key":`; yarn v1's `key "value"` (no colon) too. Comments
/// and blank lines are `None`.
fn line(raw: &str) -> Option<Line<'_>> {
    let body = raw.trim_start();
    if body.is_empty() || body.starts_with('#') {
        return None;
    }
    let indent = raw.len() - body.len();
    let body = body.trim_end();
    let (key, value) = if let Some(q) = body.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let end = body[1..].find(q)? + 1;
        (&body[1..end], body[end + 1..].trim_start().strip_prefix(':').unwrap_or(&body[end + 1..]))
    } else if let Some(i) = body.find(": ").or_else(|| body.strip_suffix(':').map(|b| b.len())) {
        (&body[..i], &body[i + 1..])
    } else {
        body.split_once(' ').unwrap_or((body, ""))
    };
    Some(Line { indent, key: key.trim(), value: unquote(value) })
}

/// The package name of a yarn key's specifier: `left-pad@^1.3.0`, `@types/node@npm:^20`.
fn spec_name(spec: &str) -> Option<(&str, &str)> {
    let at = spec.get(1..)?.find('@')? + 1;
    Some((&spec[..at], &spec[at + 1..]))
}

/// The version yarn.lock (v1, or berry's YAML) locks for `name` as package.json asks for it
/// (`range`): the entry whose key lists `name@range` (berry: `name@npm:range`), else the one
/// version every entry of that name has.
pub fn yarn(text: &str, name: &str, range: &str) -> Option<String> {
    let mut entries: Vec<(bool, String)> = Vec::new();
    let mut current: Option<bool> = None;
    for (raw, l) in text.lines().filter_map(|raw| Some((raw, line(raw)?))) {
        if l.indent == 0 {
            // A key line: `left-pad@^1.3.0, left-pad@^1.2.0:`, quoted per spec or as a whole.
            let key = raw.trim_end().strip_suffix(':').unwrap_or(raw);
            let specs = key.split(',').map(|s| unquote(unquote(s)));
            let named: Vec<&str> = specs.filter_map(spec_name).filter(|(n, _)| *n == name).map(|(_, r)| r).collect();
            current = (!named.is_empty()).then(|| named.iter().any(|r| r.strip_prefix("npm:").unwrap_or(r) == range));
        } else if let (Some(exact), "version") = (current, l.key) {
            entries.push((exact, l.value.to_string()));
            current = None;
        }
    }
    if let Some((_, v)) = entries.iter().find(|(exact, _)| *exact) {
        return Some(v.clone());
    }
    let first = entries.first()?.1.clone();
    entries.iter().all(|(_, v)| *v == first).then_some(first)
}

/// The sections of the root package's dependencies in pnpm-lock.yaml.
const PNPM_SECTIONS: [&str; 3] = ["dependencies", "devDependencies", "optionalDependencies"];

/// The version pnpm-lock.yaml locks for the root package's dependency `name`: under
/// `importers: .:` (lockfile 6 and 9 of a workspace, 9 always), else the top-level sections
/// (5: `name: 1.3.0`; 6: `name: {specifier, version}`). A peer suffix (`1.3.0(react@18.2.0)`,
/// 5's `1.3.0_react@18.2.0`) is cut; a `link:` or `file:` dependency has no registry version.
pub fn pnpm(text: &str, name: &str) -> Option<String> {
    let lines: Vec<Line> = text.lines().filter_map(line).collect();
    let top = |key: &str| lines.iter().position(|l| l.indent == 0 && l.key == key);
    let sections: Vec<usize> = match top("importers") {
        Some(i) => {
            let dot = children(&lines, i).find(|&j| lines[j].key == ".")?;
            children(&lines, dot).collect()
        }
        None => (0..lines.len()).filter(|&j| lines[j].indent == 0).collect(),
    };
    let found = sections
        .into_iter()
        .filter(|&s| PNPM_SECTIONS.contains(&lines[s].key))
        .flat_map(|s| children(&lines, s))
        .find(|&j| lines[j].key == name)?;
    let raw = match lines[found].value {
        "" => children(&lines, found).find(|&j| lines[j].key == "version").map(|j| lines[j].value)?,
        v => v,
    };
    let version = raw.split(['(', '_']).next().unwrap_or(raw).trim();
    let local = version.is_empty() || version.contains(':') || version.contains('/');
    (!local).then(|| version.to_string())
}

/// The direct children of line `i`: the following lines indented as deep as its first child,
/// up to the first line not indented past it.
fn children<'a>(lines: &'a [Line<'a>], i: usize) -> impl Iterator<Item = usize> + 'a {
    let parent = lines[i].indent;
    let block: Vec<usize> = (i + 1..lines.len()).take_while(|&j| lines[j].indent > parent).collect();
    let depth = block.first().map(|&j| lines[j].indent);
    block.into_iter().filter(move |&j| Some(lines[j].indent) == depth)
}

#[cfg(test)]
mod tests {
    use super::*;

    const YARN_V1: &str = r#"# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.
# yarn lockfile v1


"@types/node@^20", "@types/node@^20.1":
  version "20.11.5"
  resolved "https://registry.yarnpkg.com/@types/node/-/node-20.11.5.tgz#abc"

left-pad@^1.3.0, left-pad@~1.3.0:
  version "1.3.0"
  resolved "https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#5b8a"
  integrity sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQ9m=

lodash@^3:
  version "3.10.1"

lodash@^4.17.0:
  version "4.17.21"
"#;

    const YARN_BERRY: &str = r#"# This file is generated by running "yarn install" inside your project.
__metadata:
  version: 8
  cacheKey: 10c0

"app@workspace:.":
  version: 0.0.0-use.local
  resolution: "app@workspace:."
  dependencies:
    left-pad: "npm:^1.3.0"
  languageName: unknown

"left-pad@npm:^1.3.0":
  version: 1.3.0
  resolution: "left-pad@npm:1.3.0"
  checksum: 10c0/3fc2
  languageName: node
  linkType: hard
"#;

    #[test]
    fn yarn_v1_and_berry_lock_the_range_package_json_asks_for() {
        assert_eq!(yarn(YARN_V1, "left-pad", "^1.3.0").as_deref(), Some("1.3.0"));
        assert_eq!(yarn(YARN_V1, "left-pad", "~1.3.0").as_deref(), Some("1.3.0"));
        assert_eq!(yarn(YARN_V1, "@types/node", "^20").as_deref(), Some("20.11.5"));
        assert_eq!(yarn(YARN_V1, "@types/node", "^20.1").as_deref(), Some("20.11.5"));
        assert_eq!(yarn(YARN_V1, "lodash", "^4.17.0").as_deref(), Some("4.17.21"));
        // Two versions and a range neither key names: not guessed.
        assert_eq!(yarn(YARN_V1, "lodash", "*"), None);
        // One version, whatever range package.json now says (edited since the install).
        assert_eq!(yarn(YARN_V1, "left-pad", "^1.2.0").as_deref(), Some("1.3.0"));
        assert_eq!(yarn(YARN_V1, "missing", "1"), None);
        assert_eq!(yarn(YARN_BERRY, "left-pad", "^1.3.0").as_deref(), Some("1.3.0"));
        assert_eq!(yarn(YARN_BERRY, "app", "."), Some("0.0.0-use.local".into()), "a workspace is itself");
    }

    #[test]
    fn pnpm_lockfiles_5_6_and_9_give_the_root_importers_versions() {
        let v9 = "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n\nimporters:\n\n  .:\n    dependencies:\n      left-pad:\n        specifier: ^1.3.0\n        version: 1.3.0\n      react-dom:\n        specifier: ^18\n        version: 18.2.0(react@18.2.0)\n    devDependencies:\n      '@types/node':\n        specifier: ^20\n        version: 20.11.5\n      local-lib:\n        specifier: workspace:*\n        version: link:packages/local-lib\n\n  packages/other:\n    dependencies:\n      only-there:\n        specifier: ^2\n        version: 2.0.0\n\npackages:\n\n  left-pad@1.3.0:\n    resolution: {integrity: sha512-x}\n";
        assert_eq!(pnpm(v9, "left-pad").as_deref(), Some("1.3.0"));
        assert_eq!(pnpm(v9, "react-dom").as_deref(), Some("18.2.0"));
        assert_eq!(pnpm(v9, "@types/node").as_deref(), Some("20.11.5"));
        assert_eq!(pnpm(v9, "local-lib"), None, "a workspace link has no registry version");
        assert_eq!(pnpm(v9, "only-there"), None, "another importer's dependency");
        let v6 = "lockfileVersion: '6.0'\n\ndependencies:\n  left-pad:\n    specifier: ^1.3.0\n    version: 1.3.0\n\npackages:\n\n  /left-pad@1.3.0:\n    resolution: {integrity: sha512-x}\n    dev: false\n";
        assert_eq!(pnpm(v6, "left-pad").as_deref(), Some("1.3.0"));
        let v5 = "lockfileVersion: 5.4\n\nspecifiers:\n  left-pad: ^1.3.0\n  react-dom: ^18\n\ndependencies:\n  left-pad: 1.3.0\n  react-dom: 18.2.0_react@18.2.0\n";
        assert_eq!(pnpm(v5, "left-pad").as_deref(), Some("1.3.0"));
        assert_eq!(pnpm(v5, "react-dom").as_deref(), Some("18.2.0"));
        assert_eq!(pnpm(v5, "missing"), None);
    }
}
