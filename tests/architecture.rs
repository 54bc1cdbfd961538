//! The house rules, checked on the source tree: no module of any crate imports another that
//! (directly or through others) imports it back; the crates that must build without libtorch
//! never reach it; nothing depends on the CLI; library crates do not print; and
//! docs/architecture.md names every module of every crate in that crate's section.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A crate of the workspace: its package name, its folder and its source root file.
struct Crate {
    name: String,
    dir: PathBuf,
    src_root: PathBuf,
}

/// Every package of the workspace (the root package and the members of `[workspace]`).
fn crates() -> Vec<Crate> {
    let manifest = read(&root().join("Cargo.toml"));
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("Cargo.toml: [workspace] members");
    let mut dirs = vec![root()];
    dirs.extend(
        members
            .split(',')
            .map(|m| m.trim().trim_matches('"'))
            .filter(|m| !m.is_empty())
            .map(|m| root().join(m)),
    );
    dirs.into_iter()
        .map(|dir| {
            let name = package_name(&read(&dir.join("Cargo.toml")))
                .unwrap_or_else(|| panic!("{}: no package name", dir.display()));
            let lib = dir.join("src/lib.rs");
            let src_root = if lib.is_file() {
                lib
            } else {
                dir.join("src/main.rs")
            };
            Crate {
                name,
                dir,
                src_root,
            }
        })
        .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn package_name(manifest: &str) -> Option<String> {
    let package = manifest.split("[package]").nth(1)?;
    package
        .lines()
        .find_map(|l| l.trim().strip_prefix("name = "))
        .map(|n| n.trim_matches('"').to_string())
}

/// The names a manifest's `[dependencies]` section lists (not dev- or build-dependencies).
fn dependencies(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
            continue;
        }
        if let Some((name, _)) = line.split_once('=').filter(|_| inside) {
            out.insert(name.trim().trim_end_matches(".workspace").to_string());
        }
    }
    out
}

/// Source text without comments (line and block), string contents kept.
fn strip_comments(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    let b = text.as_bytes();
    let (mut i, mut in_str) = (0, false);
    while i < b.len() {
        let c = b[i];
        if in_str {
            out.push(c);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1]);
                i += 2;
                continue;
            }
            in_str = c != b'"';
            i += 1;
        } else if c == b'"' {
            in_str = !(i > 0 && b[i - 1] == b'\'' && b.get(i + 1) == Some(&b'\''));
            out.push(c);
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i = (i + 2..b.len().saturating_sub(1))
                .find(|&j| b[j..].starts_with(b"*/"))
                .map_or(b.len(), |j| j + 2);
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `code` without its `#[cfg(test)] mod name { ... }` blocks, and the names of its
/// `#[cfg(test)] mod name;` file modules (whose files are left out).
fn strip_test_modules(code: &str) -> (String, BTreeSet<String>) {
    let mut out = String::new();
    let mut test_files = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let item = after.strip_prefix("pub ").unwrap_or(after);
        let Some(module) = item.strip_prefix("mod ") else {
            rest = &rest[at + 1..];
            out.push('#');
            continue;
        };
        let name: String = module
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let tail = module[name.len()..].trim_start();
        if let Some(after_semi) = tail.strip_prefix(';') {
            test_files.insert(name);
            rest = after_semi;
            continue;
        }
        let body = &tail[tail.find('{').expect("a test module's body")..];
        let mut depth = 0usize;
        let mut end = body.len();
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &body[end..];
    }
    out.push_str(rest);
    (out, test_files)
}

/// One module of a crate: its path from the crate root and its file.
struct Module {
    path: Vec<String>,
    code: String,
}

/// Every module of the crate that `src_root` is the root file of (test-only modules left out).
fn modules(src_root: &Path) -> Vec<Module> {
    let mut out = Vec::new();
    collect_modules(src_root, Vec::new(), &mut out);
    out
}

fn collect_modules(file: &Path, path: Vec<String>, out: &mut Vec<Module>) {
    let (code, test_files) = strip_test_modules(&strip_comments(&read(file)));
    let dir = if path.is_empty() || file.ends_with("mod.rs") {
        file.parent().expect("a folder").to_path_buf()
    } else {
        file.with_extension("")
    };
    for child in declared_modules(&code) {
        if test_files.contains(&child) {
            continue;
        }
        let flat = dir.join(format!("{child}.rs"));
        let nested = dir.join(&child).join("mod.rs");
        let child_file = if flat.is_file() { flat } else { nested };
        if !child_file.is_file() {
            continue; // an inline module: part of this file
        }
        let mut child_path = path.clone();
        child_path.push(child);
        collect_modules(&child_file, child_path, out);
    }
    out.push(Module { path, code });
}

/// The names of `mod name;` declarations (file modules) in `code`.
fn declared_modules(code: &str) -> Vec<String> {
    code.lines()
        .map(str::trim)
        .filter_map(|l| {
            let l = l
                .strip_prefix("pub(crate) ")
                .or_else(|| l.strip_prefix("pub "))
                .unwrap_or(l);
            let name = l.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_string())
        })
        .collect()
}

/// The paths a use-tree or path expression starting at `text` names, as segments (a group
/// `{a::X, b}` expands to one path per member).
fn use_paths(text: &str) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1usize;
            let (mut start, mut out) = (0, Vec::new());
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        for tail in use_paths(&group[start..i]) {
                            out.push(prefix.iter().cloned().chain(tail).collect());
                        }
                        start = i + 1;
                        if c == '}' {
                            break;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            return out;
        }
        let ident: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            return if prefix.is_empty() {
                vec![]
            } else {
                vec![prefix]
            };
        }
        prefix.push(ident.clone());
        rest = &rest[ident.len()..];
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => return vec![prefix],
        }
    }
}

/// The module paths (from the crate root) `module`'s code names: `crate::`, `super::` and
/// `self::` paths, and its child modules' names used outside `pub use` re-exports.
fn named_paths(module: &Module, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let code = &module.code;
    let mut out = Vec::new();
    let starts_path = |at: usize| {
        at == 0
            || !code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
    };
    for (keyword, base) in [
        ("crate::", Vec::new()),
        ("self::", module.path.clone()),
        (
            "super::",
            module.path[..module.path.len().saturating_sub(1)].to_vec(),
        ),
    ] {
        for (at, _) in code
            .match_indices(keyword)
            .filter(|(at, _)| starts_path(*at))
        {
            for tail in use_paths(&code[at + keyword.len()..]) {
                out.push(normalized(base.iter().cloned().chain(tail)));
            }
        }
    }
    for line in code.lines().map(str::trim) {
        if line.starts_with("pub use ") || line.starts_with("pub(crate) use ") {
            continue;
        }
        for child in children {
            let needle = format!("{child}::");
            for (at, _) in line.match_indices(&needle) {
                let before = line[..at].chars().next_back();
                if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    let mut p = module.path.clone();
                    p.push(child.clone());
                    out.push(p);
                }
            }
        }
    }
    out
}

/// A path with its `super` segments applied (each drops the segment before it) and `self`
/// segments dropped.
fn normalized(segments: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    for s in segments {
        match s.as_str() {
            "super" => {
                out.pop();
            }
            "self" => {}
            _ => out.push(s),
        }
    }
    out
}

/// Which child module each item a module re-exports (`pub use child::{A, B}`) comes from.
fn reexports(module: &Module, children: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in module.code.split(';') {
        let stmt = stmt.trim();
        let Some(tree) = stmt
            .strip_prefix("pub use ")
            .or_else(|| stmt.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        for path in use_paths(tree.trim_start_matches("self::")) {
            if let (Some(first), Some(last)) = (path.first(), path.last()) {
                if children.contains(first) && path.len() > 1 {
                    out.insert(last.clone(), first.clone());
                }
            }
        }
    }
    out
}

/// The import graph of a crate's modules: module path -> the modules it names.
fn import_graph(mods: &[Module]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let known: BTreeSet<Vec<String>> = mods.iter().map(|m| m.path.clone()).collect();
    let children_of = |p: &Vec<String>| -> BTreeSet<String> {
        known
            .iter()
            .filter(|k| k.len() == p.len() + 1 && k.starts_with(p))
            .map(|k| k[p.len()].clone())
            .collect()
    };
    let reexported: BTreeMap<Vec<String>, BTreeMap<String, String>> = mods
        .iter()
        .map(|m| (m.path.clone(), reexports(m, &children_of(&m.path))))
        .collect();
    let resolve = |named: &[String]| -> Vec<String> {
        let mut at: Vec<String> = Vec::new();
        for seg in named {
            let mut next = at.clone();
            next.push(seg.clone());
            if known.contains(&next) {
                at = next;
            } else if reexported.get(&at).is_some_and(|r| r.contains_key(seg)) {
                // An item re-exported (maybe through several levels): its defining module.
                while let Some(child) = reexported.get(&at).and_then(|r| r.get(seg)) {
                    at.push(child.clone());
                }
                break;
            } else {
                break;
            }
        }
        at
    };
    mods.iter()
        .map(|m| {
            let targets = named_paths(m, &children_of(&m.path))
                .iter()
                .map(|p| resolve(p))
                .filter(|t| t != &m.path && !t.is_empty() && !t.starts_with(&m.path))
                .collect();
            (m.path.clone(), targets)
        })
        .collect()
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g Vec<String>) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let Some((w, _)) = self.graph.get_key_value(w) else {
                    continue;
                };
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.join("::"));
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

fn module_graph_of(source: &str) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let dir = std::env::temp_dir().join(format!(
        "mocc-architecture-{}-{}",
        std::process::id(),
        source.len()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    for (file, text) in source.split("=== ").filter(|s| !s.is_empty()).map(|s| {
        let (name, text) = s.split_once('\n').expect("a file name line");
        (name.trim(), text)
    }) {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("a folder");
        std::fs::write(path, text).expect("a source file");
    }
    let graph = import_graph(&modules(&dir.join("lib.rs")));
    std::fs::remove_dir_all(&dir).expect("removed");
    graph
}

#[test]
fn the_checker_finds_a_circle_through_crate_super_and_reexported_paths() {
    let graph = module_graph_of(
        "=== lib.rs\npub mod a;\npub mod b;\npub mod c;\npub use c::Thing;\n\
         === a.rs\nuse crate::b::B;\n// use crate::c; (a comment)\n\
         === b.rs\nuse crate::{c::C, a as _};\n#[cfg(test)]\nmod tests { use crate::c::C; }\n\
         === c/mod.rs\nmod inner;\npub use inner::Thing;\nfn f() { inner::g() }\n\
         === c/inner.rs\nuse super::super::a::A;\npub fn g() {}\n",
    );
    let path = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    assert_eq!(graph[&path("a")], BTreeSet::from([path("b")]));
    assert_eq!(graph[&path("b")], BTreeSet::from([path("a"), path("c")]));
    assert!(
        graph[&path("c")].is_empty(),
        "its own child is not an arrow out"
    );
    assert_eq!(graph[&path("c::inner")], BTreeSet::from([path("a")]));
    assert_eq!(circles(&graph), vec![vec!["a".to_string(), "b".into()]]);
    // Through a re-export at the root: `crate::Thing` is `c::inner`'s.
    let graph = module_graph_of(
        "=== lib.rs\npub mod x;\npub mod c;\npub use c::Thing;\n\
         === x.rs\nuse crate::Thing;\n\
         === c/mod.rs\nmod inner;\npub use inner::Thing;\n\
         === c/inner.rs\nuse crate::x;\npub struct Thing;\n",
    );
    assert_eq!(
        circles(&graph),
        vec![vec!["c::inner".to_string(), "x".into()]]
    );
}

#[test]
fn no_module_of_any_crate_imports_one_that_imports_it_back() {
    let mut found = Vec::new();
    for c in crates() {
        let graph = import_graph(&modules(&c.src_root));
        assert!(
            graph.len() > 1 || c.name == "mocc-policy-ffi",
            "{}: no modules found",
            c.name
        );
        for circle in circles(&graph) {
            found.push(format!("{}: {}", c.name, circle.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// The crates that build and test without libtorch.
const WITHOUT_LIBTORCH: [&str; 9] = [
    "mocc-policy",
    "mocc-policy-ffi",
    "mocc-gym",
    "mocc-plot",
    "mocc-eval",
    "mocc-net",
    "mocc-real",
    "mocc-python",
    "mocc-quic",
];

#[test]
fn the_crates_without_libtorch_never_reach_it_and_nothing_depends_on_the_cli() {
    let deps: BTreeMap<String, BTreeSet<String>> = crates()
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                dependencies(&read(&c.dir.join("Cargo.toml"))),
            )
        })
        .collect();
    fn reaches(
        deps: &BTreeMap<String, BTreeSet<String>>,
        from: &str,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let Some(direct) = deps.get(from) else {
            return false;
        };
        direct.iter().any(|d| {
            d == "tch" || d == "torch-sys" || (seen.insert(d.clone()) && reaches(deps, d, seen))
        })
    }
    for name in WITHOUT_LIBTORCH {
        assert!(deps.contains_key(name), "{name} is not a workspace crate");
        assert!(
            !reaches(&deps, name, &mut BTreeSet::new()),
            "{name} reaches libtorch through its [dependencies]"
        );
    }
    for (name, direct) in &deps {
        assert!(!direct.contains("mocc"), "{name} depends on the CLI");
    }
}

#[test]
fn library_crates_do_not_print() {
    let mut found = Vec::new();
    for c in crates().iter().filter(|c| c.src_root.ends_with("lib.rs")) {
        for m in modules(&c.src_root) {
            for mac in ["println!", "eprintln!", "print!(", "eprint!(", "dbg!("] {
                if m.code.contains(mac) {
                    found.push(format!("{}: {} uses {mac}", c.name, m.path.join("::")));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The section of docs/architecture.md whose `##` heading names `crate_name` in backticks.
fn section<'d>(doc: &'d str, crate_name: &str) -> Option<&'d str> {
    let tag = format!("`{crate_name}`");
    let start = doc
        .match_indices("\n## ")
        .map(|(i, _)| i + 1)
        .find(|&i| doc[i..].lines().next().is_some_and(|h| h.contains(&tag)))?;
    let end = doc[start + 3..]
        .find("\n## ")
        .map_or(doc.len(), |e| start + 3 + e);
    Some(&doc[start..end])
}

#[test]
fn docs_architecture_names_every_module_of_every_crate() {
    let doc = read(&root().join("docs/architecture.md"));
    let mut missing = Vec::new();
    for c in crates() {
        let Some(text) = section(&doc, &c.name) else {
            missing.push(format!("{}: no `## ... `{}`` section", c.name, c.name));
            continue;
        };
        for m in modules(&c.src_root).iter().filter(|m| m.path.len() == 1) {
            let name = &m.path[0];
            if !(text.contains(&format!("{name}.rs")) || text.contains(&format!("{name}/"))) {
                missing.push(format!("{}: {name}", c.name));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not name:\n{}",
        missing.join("\n")
    );
}

/// Each package's features in one `cargo tree` resolution (`{name version: features}`).
fn resolved_features(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["tree", "--offline", "--prefix", "none", "-f", "{p}|{f}"])
        .args(args)
        .current_dir(root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((package, features)) = line.trim_end_matches(" (*)").split_once('|') else {
            continue;
        };
        let name = package.split(" (").next().unwrap_or(package).to_string();
        let set = map.entry(name).or_default();
        set.extend(
            features
                .split(',')
                .filter(|f| !f.is_empty())
                .map(String::from),
        );
    }
    map
}

#[test]
fn the_python_crate_builds_its_dependencies_with_the_workspaces_features() {
    // What python/Cargo.toml lists for feature unification: maturin's build after the
    // workspace's tests reuses their compiled dependencies only where the features agree.
    let workspace = resolved_features(&["--workspace", "-e", "normal,build,dev"]);
    let python = resolved_features(&[
        "-p",
        "mocc-python",
        "--features",
        "pyo3/extension-module",
        "-e",
        "normal,build",
    ]);
    let unified = [
        "anstyle",
        "digest",
        "memchr",
        "num-integer",
        "num-traits",
        "zerocopy",
        "getrandom",
    ];
    let mut differ = Vec::new();
    for (package, features) in &python {
        let name = package.split(' ').next().unwrap_or_default();
        if !unified.contains(&name) {
            continue;
        }
        if workspace.get(package) != Some(features) {
            differ.push(format!(
                "{package}: {features:?} for the python crate, {:?} for the workspace",
                workspace.get(package)
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
