//! The core's layering: each top-level module of `src/` imports only modules
//! of its own layer or of the layers below it, and the modules import no
//! cycle. The models own their configuration; `config` assembles the
//! scenario from them and `sim` runs it, so no model imports `config` or
//! `sim`. The layers are listed here and in docs/architecture.md ("Layers of
//! the core"); a test checks that the two lists agree.
//!
//! Imports are read from the source text: every `crate::a` path (in `use`
//! lines or inline, `crate::{a, b}` groups included) and every `super::`
//! chain that climbs out of its file's top-level module, outside comments.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, lowest first.
const LAYERS: &[(&str, &[&str])] = &[
    ("foundations", &["error", "ids", "units", "rng", "histogram", "event_queue"]),
    ("records", &["packet", "stats", "token_bucket"]),
    ("device models", &["power", "buffer", "pipeline", "transport"]),
    ("hosts and network", &["host", "network"]),
    ("traffic", &["traffic"]),
    ("extensions", &["extension"]),
    ("scenario", &["config"]),
    ("simulation", &["sim"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// A file's module path below the crate root: `src/a/b.rs` and `src/a/b/mod.rs` are `[a, b]`;
/// `lib.rs` is `[]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source without comments (line comments, doc comments and block comments); string
/// literals are kept (no module path is ever written in one).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let (mut i, mut depth, mut in_str) = (0, 0usize, false);
    while i < b.len() {
        if depth > 0 {
            if b[i..].starts_with(b"*/") {
                depth -= 1;
                i += 2;
            } else if b[i..].starts_with(b"/*") {
                depth += 1;
                i += 2;
            } else {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            continue;
        }
        if in_str {
            if b[i] == b'\\' && i + 1 < b.len() {
                out.push(b[i] as char);
                out.push(b[i + 1] as char);
                i += 2;
                continue;
            }
            if b[i] == b'"' {
                in_str = false;
            }
            out.push(b[i] as char);
            i += 1;
            continue;
        }
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            depth = 1;
            i += 2;
        } else {
            if b[i] == b'"' && (i == 0 || b[i - 1] != b'\'') {
                in_str = true;
            }
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The first segments of the paths in a `{...}` group that starts at `s` (just after the `{`).
fn group_heads(s: &str) -> Vec<String> {
    let (mut heads, mut depth, mut start) = (Vec::new(), 0usize, true);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => start = true,
            c if start && (c.is_ascii_alphabetic() || c == '_') => {
                heads.push(ident_at(&s[i..]).to_string());
                start = false;
            }
            c if !c.is_whitespace() => start = false,
            _ => {}
        }
    }
    heads
}

/// The crate's top-level modules that the file at `module` (its module path) with source
/// `text` names, its own top-level module excepted.
fn imports(module: &[String], text: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let code = strip_comments(text);
    let own = module.first().cloned().unwrap_or_default();
    let mut found = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            found.extend(group_heads(group));
        } else {
            found.insert(ident_at(rest).to_string());
        }
    }
    // `super::` chains: one inline module (`mod tests { .. }`) is assumed around a chain that
    // comes after one opens.
    let mut inline = 0;
    for line in code.lines() {
        let t = line.trim_start();
        if (t.starts_with("mod ") || t.starts_with("pub mod ") || t.starts_with("pub(crate) mod ")) && t.ends_with('{')
        {
            inline = 1;
        }
        let mut from = 0;
        while let Some(k) = line[from..].find("super::") {
            let at = from + k;
            let prefix_ok = !line[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            let mut rest = &line[at..];
            let mut ups = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                ups += 1;
                rest = r;
            }
            from = line.len() - rest.len();
            if !prefix_ok {
                continue;
            }
            let depth = module.len() + inline;
            if ups >= depth {
                if let Some(group) = rest.strip_prefix('{') {
                    found.extend(group_heads(group));
                } else {
                    found.insert(ident_at(rest).to_string());
                }
            }
        }
    }
    found.retain(|m| known.contains(m) && *m != own);
    found
}

/// Every top-level module and the top-level modules it imports.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let paths: Vec<(Vec<String>, PathBuf)> =
        files.into_iter().map(|p| (module_path(p.strip_prefix(&root).unwrap()), p)).collect();
    let known: BTreeSet<String> = paths.iter().filter_map(|(m, _)| m.first().cloned()).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, path) in &paths {
        let Some(top) = module.first() else { continue };
        let text = fs::read_to_string(path).unwrap();
        g.entry(top.clone()).or_default().extend(imports(module, &text, &known));
    }
    g
}

fn layer_of() -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for (i, (_, modules)) in LAYERS.iter().enumerate() {
        for &module in *modules {
            assert!(m.insert(module, i).is_none(), "{module} is in two layers");
        }
    }
    m
}

/// The imports of `g` that reach a higher layer, as `"a (layer) imports b (layer)"`.
fn upward(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let layer = layer_of();
    let mut wrong = Vec::new();
    for (module, targets) in g {
        let Some(&own) = layer.get(module.as_str()) else { continue };
        for t in targets {
            if let Some(&l) = layer.get(t.as_str()) {
                if l > own {
                    wrong.push(format!("{module} ({}) imports {t} ({})", LAYERS[own].0, LAYERS[l].0));
                }
            }
        }
    }
    wrong
}

/// One import cycle (first == last), or empty.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, bool>,
        stack: &mut Vec<String>,
    ) -> Vec<String> {
        state.insert(n.to_string(), false);
        stack.push(n.to_string());
        for t in g.get(n).into_iter().flatten() {
            match state.get(t) {
                Some(false) => {
                    let at = stack.iter().position(|s| s == t).unwrap();
                    let mut c = stack[at..].to_vec();
                    c.push(t.clone());
                    return c;
                }
                Some(true) => {}
                None => {
                    let c = visit(t, g, state, stack);
                    if !c.is_empty() {
                        return c;
                    }
                }
            }
        }
        stack.pop();
        state.insert(n.to_string(), true);
        Vec::new()
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if !state.contains_key(n) {
            let c = visit(n, g, &mut state, &mut Vec::new());
            if !c.is_empty() {
                return c;
            }
        }
    }
    Vec::new()
}

#[test]
fn every_module_is_in_one_layer() {
    let layer = layer_of();
    let modules: BTreeSet<String> = graph().into_keys().collect();
    let unplaced: Vec<_> = modules.iter().filter(|m| !layer.contains_key(m.as_str())).collect();
    assert!(unplaced.is_empty(), "modules in no layer (add them to LAYERS and docs/architecture.md): {unplaced:?}");
    let missing: Vec<_> = layer.keys().filter(|m| !modules.contains(**m)).collect();
    assert!(missing.is_empty(), "layers name modules that do not exist: {missing:?}");
}

#[test]
fn modules_import_only_their_layer_and_below() {
    let g = graph();
    assert!(g["sim"].contains("config") && g["config"].contains("buffer"), "the import reader finds nothing: {g:?}");
    let wrong = upward(&g);
    assert!(wrong.is_empty(), "upward imports (move the type to the layer that owns it):\n{}", wrong.join("\n"));
}

#[test]
fn no_model_imports_the_scenario_or_the_simulation() {
    let g = graph();
    let wrong: Vec<_> = g
        .iter()
        .filter(|(m, _)| *m != "sim" && *m != "config")
        .flat_map(|(m, t)| t.iter().filter(|t| *t == "sim" || *t == "config").map(move |t| format!("{m} imports {t}")))
        .collect();
    assert!(wrong.is_empty(), "{wrong:?}");
}

#[test]
fn the_import_graph_has_no_cycle() {
    let c = cycle(&graph());
    assert!(c.is_empty(), "import cycle: {}", c.join(" -> "));
}

#[test]
fn the_checks_find_an_upward_import_and_a_cycle() {
    let known: BTreeSet<String> =
        ["buffer", "config", "sim", "stats", "network"].iter().map(|s| s.to_string()).collect();
    let m = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let text = "//! see crate::sim\nuse crate::stats::DropReason;\n/* crate::network */\nfn f(c: &crate::config::Scenario) {}\n";
    let found = imports(&m(&["buffer", "shared"]), text, &known);
    assert_eq!(found, ["config", "stats"].iter().map(|s| s.to_string()).collect());
    let grouped = imports(&m(&["network"]), "use crate::{buffer::BufferModel, sim::{Event, Simulation}};", &known);
    assert_eq!(grouped, ["buffer", "sim"].iter().map(|s| s.to_string()).collect());
    let climbed =
        imports(&m(&["sim"]), "use super::config::Scenario;\nmod tests {\n    use super::Simulation;\n}", &known);
    assert_eq!(climbed, ["config"].iter().map(|s| s.to_string()).collect());
    let g: BTreeMap<String, BTreeSet<String>> = [("buffer".to_string(), found)].into_iter().collect();
    assert_eq!(upward(&g), vec!["buffer (device models) imports config (scenario)".to_string()]);
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    let g: BTreeMap<_, _> =
        [("a".to_string(), set(&["b"])), ("b".to_string(), set(&["c"])), ("c".to_string(), set(&["a"]))]
            .into_iter()
            .collect();
    assert_eq!(cycle(&g), vec!["a", "b", "c", "a"]);
    let g: BTreeMap<_, _> =
        [("a".to_string(), set(&["b", "c"])), ("b".to_string(), set(&["c"])), ("c".to_string(), set(&[]))]
            .into_iter()
            .collect();
    assert!(cycle(&g).is_empty());
}

#[test]
fn docs_list_the_same_layers() {
    let doc = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md")).unwrap();
    let start = doc.find("## Layers of the core").expect("docs/architecture.md has a \"Layers of the core\" section");
    let rows: Vec<Vec<String>> = doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            let mut names: Vec<String> = cells[2]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(|s| s.trim_end_matches('/').trim_end_matches(".rs").to_string())
                .collect();
            names.dedup();
            names
        })
        .collect();
    let expected: Vec<Vec<String>> = LAYERS.iter().map(|(_, ms)| ms.iter().map(|s| s.to_string()).collect()).collect();
    assert_eq!(rows, expected, "docs/architecture.md's layers (lowest first) differ from LAYERS");
}
