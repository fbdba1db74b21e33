//! No two files of the crate use each other, directly or round a loop: a type two files share
//! lives in a leaf file both use, not in the file of one of them (`AGENTS.md`, layers). A use
//! is a path a file names (`crate::…`, `super::…`, `self::…`, `child::…`, `use` groups),
//! outside comments and its inline test module; it points at the file of the longest module
//! the path names, or through a re-export (`pub use child::Item;`) at the file that holds the
//! item. A re-export is a module's surface, not a use of its own.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::layering::{code_lines, is_test_file, rust_files};

/// A file's module path from the crate root (`view/task_map.rs` → `["view", "task_map"]`).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|last| last == "mod" || last == "lib" || last == "main")
    {
        parts.pop();
    }
    parts
}

fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The paths `text` names from `crate`, `super` or `self`, each as segments from the crate
/// root, for a file whose module is `module`.
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    // A file `a/b.rs` and `a/b/mod.rs` are both module a::b, whose `super` is a.
    let parent: Vec<String> = module[..module.len().saturating_sub(1)].to_vec();
    let mut paths = Vec::new();
    for head in ["crate::", "super::", "self::"] {
        let mut rest = code;
        while let Some(at) = rest.find(head) {
            let before = rest[..at].chars().last();
            rest = &rest[at + head.len()..];
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let base: Vec<String> = match head {
                "crate::" => Vec::new(),
                "super::" => parent.clone(),
                _ => module.to_vec(),
            };
            let mut segments = Vec::new();
            let mut tail = rest;
            loop {
                if let Some(group) = tail.strip_prefix('{') {
                    // `use super::{a, b::C}`: each member names a path of its own.
                    let close = group.find('}').unwrap_or(group.len());
                    for member in group[..close].split(',') {
                        let first = ident(member.trim());
                        if !first.is_empty() && first != "self" {
                            let mut path = base.clone();
                            path.extend(segments.iter().cloned());
                            path.push(first.to_owned());
                            paths.push(path);
                        }
                    }
                    segments.clear();
                    break;
                }
                let name = ident(tail);
                if name.is_empty() {
                    break;
                }
                segments.push(name.to_owned());
                tail = &tail[name.len()..];
                match tail.strip_prefix("::") {
                    Some(next) => tail = next,
                    None => break,
                }
            }
            if !segments.is_empty() {
                let mut path = base;
                path.extend(segments);
                paths.push(path);
            }
        }
    }
    paths
}

/// The paths `code` names relative to its own module: `child::…` for a child module of it
/// (`use task_map::Slot;` in `view/mod.rs`).
fn child_paths(
    code: &str,
    module: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("::") {
        let head = &rest[..at];
        let name_start = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = &head[name_start..];
        let before = head[..name_start].chars().last();
        rest = &rest[at + 2..];
        if name.is_empty() || before == Some(':') {
            continue;
        }
        let mut path = module.to_vec();
        path.push(name.to_owned());
        if modules.contains_key(&path) {
            paths.push(path);
        }
    }
    paths
}

/// Whether `statement` (a `use …;` without its `;`) re-exports: `pub use`, `pub(crate) use`…
fn is_reexport(statement: &str) -> bool {
    let statement = statement.trim_start();
    statement.starts_with("pub use ")
        || (statement.starts_with("pub(") && statement.contains(") use "))
}

/// The `use` statements of `code`, each with its re-export flag, and the code without the
/// re-exports.
fn split_reexports(code: &str) -> (Vec<String>, String) {
    let mut reexports = Vec::new();
    let mut rest = String::new();
    let mut pending: Option<String> = None;
    for line in code.lines() {
        if let Some(statement) = pending.as_mut() {
            statement.push_str(line);
            if line.contains(';') {
                reexports.extend(pending.take());
            }
            continue;
        }
        if is_reexport(line) {
            if line.contains(';') {
                reexports.push(line.to_owned());
            } else {
                pending = Some(line.to_owned());
            }
            continue;
        }
        rest.push_str(line);
        rest.push('\n');
    }
    (reexports, rest)
}

/// What a re-export statement of the file of `module` makes visible: each name it exports and
/// the path it names from the crate root.
fn reexported(
    statement: &str,
    module: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
) -> Vec<(String, Vec<String>)> {
    let tree = statement
        .split_once(" use ")
        .map_or("", |(_, tree)| tree)
        .trim()
        .trim_end_matches(';')
        .replace(char::is_whitespace, "");
    let (prefix, members) = match tree.split_once("::{") {
        Some((prefix, group)) => (prefix.to_owned(), group.trim_end_matches('}').to_owned()),
        None => match tree.rsplit_once("::") {
            Some((prefix, last)) => (prefix.to_owned(), last.to_owned()),
            None => return Vec::new(),
        },
    };
    let mut segments: Vec<String> = prefix.split("::").map(str::to_owned).collect();
    let base: Vec<String> = match segments.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super") => module[..module.len().saturating_sub(1)].to_vec(),
        Some("self") => module.to_vec(),
        _ => {
            let mut child = module.to_vec();
            child.push(segments[0].clone());
            if !modules.contains_key(&child) {
                return Vec::new();
            }
            segments.insert(0, "self".to_owned());
            module.to_vec()
        }
    };
    segments.remove(0);
    members
        .split(',')
        .filter(|member| !member.is_empty() && *member != "self")
        .map(|member| {
            let (name, alias) = member.split_once("as").unwrap_or((member, member));
            let mut path = base.clone();
            path.extend(segments.iter().cloned());
            path.extend(name.split("::").map(str::to_owned));
            let exported = alias.rsplit("::").next().unwrap_or(alias).to_owned();
            (exported, path)
        })
        .collect()
}

/// The files of the crate at `src` and the files each uses.
fn uses(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    // A `main.rs` beside `lib.rs` is a crate of its own (the binary), with its own `crate`.
    if src.join("lib.rs").is_file() {
        files.retain(|f| f != &src.join("main.rs"));
    }
    let by_module: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| {
            let relative = f.strip_prefix(src).unwrap().to_path_buf();
            (module_path(&relative), relative)
        })
        .collect();
    let mut sources = BTreeMap::new();
    let mut surfaces: BTreeMap<PathBuf, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(src).unwrap().to_path_buf();
        if is_test_file(&relative) {
            continue;
        }
        let module = module_path(&relative);
        let text = std::fs::read_to_string(file).unwrap();
        let code: Vec<&str> = code_lines(&text)
            .into_iter()
            .map(|(_, line)| line)
            .collect();
        let (reexports, code) = split_reexports(&code.join("\n"));
        let surface = surfaces.entry(relative.clone()).or_default();
        for statement in &reexports {
            surface.extend(reexported(statement, &module, &by_module));
        }
        sources.insert(relative, (module, code));
    }
    // The file a path names: its longest module's, or through that file's re-export of the
    // next segment, the file that holds the item.
    let file_of = |path: &[String]| -> Option<PathBuf> {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let n = (1..=path.len())
                .rev()
                .find(|n| by_module.contains_key(&path[..*n]))?;
            let file = by_module.get(&path[..n])?;
            let through = path
                .get(n)
                .and_then(|item| surfaces.get(file).and_then(|surface| surface.get(item)));
            match through {
                Some(target) => {
                    let mut next = target.clone();
                    next.extend(path[n + 1..].iter().cloned());
                    path = next;
                }
                None => return Some(file.clone()),
            }
        }
        None
    };
    let mut edges = BTreeMap::new();
    for (relative, (module, code)) in &sources {
        let mut used = BTreeSet::new();
        let mut paths = named_paths(code, module);
        paths.extend(child_paths(code, module, &by_module));
        for path in paths {
            // A module's own children are part of it (they hold its impls and helpers);
            // what counts is a child using its parent or a sibling.
            if let Some(target) = file_of(&path)
                && !module_path(&target).starts_with(module)
            {
                used.insert(target);
            }
        }
        edges.insert(relative.clone(), used);
    }
    edges
}

/// The loops among `edges`: each strongly connected set of more than one file.
fn loops(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    // Kosaraju: an order by finish time, then the reversed graph in its reverse.
    fn visit(
        node: &PathBuf,
        edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        seen: &mut BTreeSet<PathBuf>,
        out: &mut Vec<PathBuf>,
    ) {
        if !seen.insert(node.clone()) {
            return;
        }
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, seen, out);
        }
        out.push(node.clone());
    }
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    for node in edges.keys() {
        visit(node, edges, &mut seen, &mut order);
    }
    let mut reversed: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (from, tos) in edges {
        for to in tos {
            reversed.entry(to.clone()).or_default().insert(from.clone());
        }
    }
    let mut assigned = BTreeSet::new();
    let mut found = Vec::new();
    for node in order.iter().rev() {
        let mut component = Vec::new();
        visit(node, &reversed, &mut assigned, &mut component);
        if component.len() > 1 {
            component.sort();
            found.push(component);
        }
    }
    found
}

#[test]
fn no_file_uses_another_that_uses_it_back() {
    // This crate's, and the workspace's other crates' (the rule is the repository's).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crates = [
        "src",
        "../wire/src",
        "../server/src",
        "../bindings/python/src",
        "../bindings/node/src",
    ];
    let mut edges = BTreeMap::new();
    for dir in crates
        .iter()
        .map(|dir| root.join(dir))
        .filter(|dir| dir.is_dir())
    {
        let crate_name = dir.parent().unwrap().file_name().unwrap().to_owned();
        for (file, used) in uses(&dir) {
            let named = |file: PathBuf| Path::new(&crate_name).join(file);
            edges.insert(named(file), used.into_iter().map(named).collect());
        }
    }
    let found = loops(&edges);
    let shown: Vec<Vec<String>> = found
        .iter()
        .map(|files| {
            let within: BTreeSet<&PathBuf> = files.iter().collect();
            files
                .iter()
                .flat_map(|from| {
                    let to = edges[from].iter().filter(|to| within.contains(to));
                    to.map(move |to| format!("{} -> {}", from.display(), to.display()))
                })
                .collect()
        })
        .collect();
    assert!(
        found.is_empty(),
        "file loops (the uses within each): {shown:#?}"
    );
}

#[test]
fn a_loop_is_found_and_a_use_through_a_group_counts() {
    let module = vec!["view".to_owned(), "tasks".to_owned()];
    let paths = named_paths(
        "use super::{key::Key, task_map::Slot};\nlet e = crate::error::Error::new();\n",
        &module,
    );
    let shown: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert!(shown.contains(&"view::key".to_owned()), "{shown:?}");
    assert!(shown.contains(&"view::task_map".to_owned()), "{shown:?}");
    assert!(shown.contains(&"error::Error::new".to_owned()), "{shown:?}");
    let edge = |from: &str, to: &str| (PathBuf::from(from), BTreeSet::from([PathBuf::from(to)]));
    let edges = BTreeMap::from([
        edge("a.rs", "b.rs"),
        edge("b.rs", "a.rs"),
        edge("c.rs", "a.rs"),
    ]);
    assert_eq!(
        loops(&edges),
        [vec![PathBuf::from("a.rs"), PathBuf::from("b.rs")]]
    );
}
