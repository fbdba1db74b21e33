//! The crate's layers, checked: a module uses only the modules of layers below its own (the
//! layering `AGENTS.md` draws). A shared type two layers need lives in the lower one, or in a
//! leaf of its own; tests may reach anywhere.

#![allow(clippy::unwrap_used)]

use std::path::Path;

/// Each top-level module and its layer. A module may name another only if that one's layer
/// is lower; two modules of one layer (the bridges and the worker) do not name each other.
const LAYERS: &[(&str, u8)] = &[
    ("error", 0),
    ("retention", 1),
    ("hops", 1),
    ("skill", 1),
    ("telemetry", 1),
    ("log", 2),
    ("agent", 3),
    ("security", 3),
    ("view", 4),
    ("members", 4),
    ("bridge", 5),
    ("worker", 5),
    ("placement", 5),
    ("mcp", 6),
    ("edge", 6),
    ("push", 6),
    ("http", 7),
    // Above HTTP: a call about a partition held elsewhere goes through its forwarder.
    ("grpc", 8),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS
        .iter()
        .find(|(name, _)| *name == module)
        .map(|(_, layer)| *layer)
}

/// The lines of `text` a use can be in, numbered from 1: none in a comment, none from the
/// file's inline test module (`#[cfg(test)] mod … {`) on. The file-cycle test reads the same.
pub(crate) fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut code = Vec::new();
    for (number, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            // The first line after the attributes: an inline module ends the scan.
            let item = lines[number + 1..]
                .iter()
                .map(|l| l.trim())
                .find(|l| !l.starts_with("#["));
            if item.is_some_and(|item| item.starts_with("mod ") && item.ends_with('{')) {
                break;
            }
        }
        if !trimmed.starts_with("//") {
            code.push((number + 1, trimmed));
        }
    }
    code
}

/// The top-level modules `text` names as `crate::<module>`, outside comments and before the
/// file's inline test module.
fn named_modules(text: &str) -> Vec<(usize, String)> {
    let mut named = Vec::new();
    for (number, code) in code_lines(text) {
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            named.push((number, name));
        }
    }
    named
}

pub(crate) fn is_test_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name.ends_with("tests.rs")
        || path
            .components()
            .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "testdata")
}

pub(crate) fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_names_a_module_of_its_own_layer_or_above() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations = Vec::new();
    for (module, own) in LAYERS {
        let mut files = Vec::new();
        let dir = src.join(module);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
        let file = src.join(format!("{module}.rs"));
        if file.is_file() {
            files.push(file);
        }
        for path in files.iter().filter(|p| !is_test_file(p)) {
            let text = std::fs::read_to_string(path).unwrap();
            for (line, named) in named_modules(&text) {
                let Some(theirs) = layer(&named) else {
                    continue;
                };
                if named != *module && theirs >= *own {
                    let shown = path.strip_prefix(&src).unwrap_or(path).display();
                    violations.push(format!(
                        "{shown}:{line}: {module} (layer {own}) names crate::{named} (layer {theirs})"
                    ));
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn every_top_level_module_has_a_layer() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    for line in lib.lines() {
        if let Some(module) = line
            .trim_start()
            .strip_prefix("pub mod ")
            .and_then(|m| m.strip_suffix(';'))
        {
            assert!(layer(module).is_some(), "{module} has no layer in LAYERS");
        }
    }
}

#[test]
fn names_in_comments_and_test_modules_are_not_uses() {
    let text = "#[cfg(test)]\nmod other_tests;\nuse crate::log::Log;\n// crate::http\nfn f() { crate::view::x(); }\n#[cfg(test)]\n#[allow(clippy::unwrap_used)]\nmod tests {\n use crate::http;\n}";
    let named: Vec<String> = named_modules(text).into_iter().map(|(_, n)| n).collect();
    assert_eq!(named, ["log", "view"]);
}
