//! The crate's modules depend on each other in one direction only (rules, index, solver,
//! storage, builder, probe, then the interfaces): this test reads `src/` (a module is a file or a
//! folder) and fails on any cycle among the modules' `crate::` paths (comments and test modules
//! aside), and on any cycle among the files of the library and of the program (a file naming
//! another through a `super::` or `crate::` path depends on it; `mod.rs`, `lib.rs` and
//! `main.rs` only declare). `scripts/module-graph` prints the modules' graph. It also checks the public API's seam: the
//! program (`cli/`), the C library (`capi/`) and the Python package (`python/`) are crates of their
//! own over the library, so the compiler holds them to its public API; the internal modules stay
//! internal and the public ones are the documented ones.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // A module is a file `src/NAME.rs` or a folder `src/NAME/` (all its files but its test
    // folders, `src/NAME/tests/`); the crate root is not a module of the graph.
    fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let p = entry.path();
            if p.file_name().is_some_and(|n| n == "tests" || n == "tests.rs") {
                continue;
            }
            if p.is_dir() {
                files_under(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let p = entry.path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" {
            continue;
        }
        if p.is_dir() {
            let mut inside = Vec::new();
            files_under(&p, &mut inside);
            files.extend(inside.into_iter().map(|f| (name.clone(), f)));
        } else if p.extension().is_some_and(|e| e == "rs") {
            files.push((name, p));
        }
    }
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, path) in files {
        let text = std::fs::read_to_string(path).unwrap();
        let code = without_tests(&text);
        let deps = g.entry(name.clone()).or_default();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for part in line.split("crate::").skip(1) {
                let dep: String = part.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                if !dep.is_empty() && dep != name {
                    deps.insert(dep);
                }
            }
        }
    }
    let known: BTreeSet<String> = g.keys().cloned().collect();
    for deps in g.values_mut() {
        deps.retain(|d| known.contains(d));
    }
    g
}

#[test]
fn modules_have_no_cycle() {
    let g = graph();
    assert!(g.len() >= 12, "{g:?}");
    // Kahn's algorithm: repeatedly remove modules with no remaining dependency.
    let mut left = g.clone();
    while let Some(leaf) = left.iter().find(|(_, d)| d.is_empty()).map(|(m, _)| m.clone()) {
        left.remove(&leaf);
        for deps in left.values_mut() {
            deps.remove(&leaf);
        }
    }
    assert!(left.is_empty(), "modules in a cycle: {left:?}");
    // The seams the design promises.
    assert!(!g["verify"].contains("solver") && !g["verify"].contains("builder"), "the verifier must not use the builder");
    assert!(!g["solver"].contains("storage") && !g["solver"].contains("builder"), "the solver is the algorithm only");
    assert!(g["progress"].is_empty(), "progress is a leaf");
}

/// The root's module declarations: (name, public).
fn declared_modules() -> Vec<(String, bool)> {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let (public, rest) = if let Some(r) = l.strip_prefix("pub mod ") {
                (true, r)
            } else if let Some(r) = l.strip_prefix("pub(crate) mod ").or_else(|| l.strip_prefix("mod ")) {
                (false, r)
            } else {
                return None;
            };
            Some((rest.trim_end_matches(';').to_string(), public))
        })
        .collect()
}

#[test]
fn the_public_modules_are_the_documented_ones_and_the_internals_stay_inside() {
    let modules = declared_modules();
    let public: BTreeSet<&str> = modules.iter().filter(|(_, p)| *p).map(|(m, _)| m.as_str()).collect();
    for internal in ["solver", "sys", "format", "dtc"] {
        assert!(modules.iter().any(|(m, p)| m == internal && !p), "`{internal}` must be declared `pub(crate) mod` in src/lib.rs");
    }
    // The crate documentation's table of public modules (`//! | [`name`] | ...` rows) names
    // exactly the public modules.
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let table_start = lib.find("## Public modules").expect("src/lib.rs documents its public modules");
    let documented: BTreeSet<&str> = lib[table_start..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("//!"))
        .filter_map(|l| l.strip_prefix("//! | ")?.split(" |").next())
        .filter_map(|cell| cell.trim_start_matches('[').split('`').nth(1))
        .filter(|name| *name != "module")
        .collect();
    assert_eq!(public, documented, "public modules (src/lib.rs) and the documented table differ");
}

#[test]
fn the_program_and_the_bindings_are_crates_over_the_public_api() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The library offers no switch that would open its internals to another crate.
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let features = manifest.split("[features]").nth(1).unwrap().split("\n[").next().unwrap();
    let names: BTreeSet<&str> =
        features.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.split('=').next()).map(str::trim).filter(|n| !n.is_empty()).collect();
    // `eval-fit` adds the evaluation's fitting for examples/fit_eval.rs only: no crate of the
    // project turns it on (checked below).
    assert_eq!(names, BTreeSet::from(["clap", "eval-fit", "mpi"]), "the library's features");
    for (dir, package) in [("cli", "oware-cli"), ("capi", "oware-capi"), ("python", "oware-python")] {
        let toml = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
        assert!(toml.contains(&format!("name = \"{package}\"")), "{dir}/ is the package {package}");
        assert!(!toml.contains("eval-fit"), "{dir}/ turns on the library's eval-fit feature");
        assert!(
            toml.lines().any(|l| l.contains("package = \"oware\"") || l.trim_start().starts_with("oware = ")) && toml.contains("path = \"..\""),
            "{dir}/ uses the library as a dependency"
        );
        // No source file of the library compiled into another crate.
        let mut files = Vec::new();
        fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let p = entry.path();
                if p.is_dir() {
                    rs_files(&p, out);
                } else if p.extension().is_some_and(|e| e == "rs") {
                    out.push(p);
                }
            }
        }
        rs_files(&root.join(dir).join("src"), &mut files);
        assert!(!files.is_empty(), "{dir}/src has sources");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for needle in ["#[path", "include!("] {
                assert!(!text.contains(needle), "{} uses {needle}: the library's files must not be compiled into another crate", f.display());
            }
        }
    }
    // The program is not a target of the library's package.
    assert!(!manifest.contains("[[bin]]"), "the program is its own crate (cli/)");
}

/// The file a module path names, walking `segments` down from the folder `dir` (`src/` for
/// `crate::`): `NAME.rs` or `NAME/mod.rs` for each segment while one exists. `None` when the
/// first segment names no file (an item of the folder's own `mod.rs` or of the crate root).
fn file_of(dir: &Path, segments: &[String]) -> Option<std::path::PathBuf> {
    let mut found = None;
    let mut here = dir.to_path_buf();
    for s in segments {
        let file = here.join(format!("{s}.rs"));
        let folder_mod = here.join(s).join("mod.rs");
        if file.is_file() {
            found = Some(file);
        } else if folder_mod.is_file() {
            found = Some(folder_mod);
        } else {
            break;
        }
        here = here.join(s);
    }
    found
}

/// The module paths a source names after `crate::` and `super::` (each `a::b::c` chain, and
/// every leading chain of a `{...}` group, nested groups included): (`crate` or `super`, the
/// segments).
fn paths_named(code: &str) -> Vec<(&'static str, Vec<String>)> {
    fn ident(s: &str) -> (&str, &str) {
        let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
        (&s[..end], &s[end..])
    }
    // Every chain from `s` (after `root::`), with `prefix` before it.
    fn chains(s: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut segs = prefix;
        let mut rest = s;
        let mut grouped = false;
        loop {
            let (id, after) = ident(rest);
            if id.is_empty() {
                if let Some(inner) = rest.strip_prefix('{') {
                    grouped = true;
                    // Split the group's top level by commas.
                    let (mut depth, mut start) = (0, 0);
                    for (i, c) in inner.char_indices() {
                        match c {
                            '{' => depth += 1,
                            '}' if depth == 0 => {
                                chains(inner[start..i].trim_start(), segs.clone(), out);
                                break;
                            }
                            '}' => depth -= 1,
                            ',' if depth == 0 => {
                                chains(inner[start..i].trim_start(), segs.clone(), out);
                                start = i + 1;
                            }
                            _ => {}
                        }
                    }
                }
                break;
            }
            segs.push(id.to_string());
            match after.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        if !segs.is_empty() && !grouped {
            out.push(segs);
        }
    }
    let mut found = Vec::new();
    for root in ["crate", "super"] {
        let needle = format!("{root}::");
        for (at, _) in code.match_indices(&needle) {
            // Not the tail of a longer name (`mycrate::`), nor `super::super::` read twice.
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut out = Vec::new();
            chains(&code[at + needle.len()..], Vec::new(), &mut out);
            found.extend(out.into_iter().map(|segs| (if root == "crate" { "crate" } else { "super" }, segs)));
        }
    }
    found
}

/// A crate's files under `src` (test folders and modules aside) and, for each, the files it names:
/// a file `src/a/b.rs` naming `super::c::X` or `crate::a::c::X` depends on `src/a/c.rs`. The
/// folders' `mod.rs`, `lib.rs` and `main.rs` only declare, re-export and dispatch: they are not
/// files of the graph.
fn file_graph(src: &Path) -> BTreeMap<std::path::PathBuf, BTreeSet<std::path::PathBuf>> {
    let src = src.to_path_buf();
    fn all(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "tests") {
                    all(&p, out);
                }
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    all(&src, &mut files);
    // A `tests.rs` is a test module's file (`#[cfg(test)] mod tests;`): test code, as a `tests/` folder.
    let node = |p: &Path| p.file_name().is_some_and(|n| n != "mod.rs" && n != "lib.rs" && n != "main.rs" && n != "tests.rs");
    let mut g = BTreeMap::new();
    for f in files.iter().filter(|f| node(f)) {
        let text = std::fs::read_to_string(f).unwrap();
        let code = without_tests(&text);
        // `super::` of `src/a/b.rs` is the folder `src/a/` (its `mod.rs`, or the file `src/a.rs`).
        let parent = f.parent().unwrap();
        let mut deps = BTreeSet::new();
        for (root, segs) in paths_named(&code) {
            let base = if root == "crate" { src.clone() } else { parent.to_path_buf() };
            if let Some(dep) = file_of(&base, &segs) {
                if node(&dep) && dep != *f {
                    deps.insert(dep);
                }
            }
        }
        g.insert(f.clone(), deps);
    }
    g
}

/// A source file's code as the graphs read it: comment lines out, and every item marked
/// `#[cfg(test)]` out (a test module, inline or `mod tests;`, and test-only functions wherever
/// they stand, not only everything after the first mark).
fn without_tests(text: &str) -> String {
    let code: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        rest = &rest[at + MARK.len()..];
        rest = &rest[item_end(rest)..];
    }
    out.push_str(rest);
    out
}

/// The length of the item at the start of `s`: up to its first `;` outside braces, or its
/// outermost `{...}` group (string, raw string and character literals skipped).
fn item_end(s: &str) -> usize {
    let b = s.as_bytes();
    let (mut i, mut depth) = (0, 0usize);
    while i < b.len() {
        match b[i] {
            b'r' if b.get(i + 1).is_some_and(|&c| c == b'"' || c == b'#') && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) => {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                let close = format!("\"{}", "#".repeat(hashes));
                let open = i + 2 + hashes;
                i = s[open..].find(&close).map_or(b.len(), |k| open + k + close.len());
                continue;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') => i += 2,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    b.len()
}

#[test]
fn test_items_are_left_out_wherever_they_stand() {
    let text = "use crate::a::X;\n#[cfg(test)]\nfn helper() { let s = \"}\"; let r = r#\"{\"#; let c = '}'; crate::b::y(); }\nfn kept() { crate::c::z(); }\n#[cfg(test)]\nmod tests;\nfn also() { crate::d::w(); }\n#[cfg(test)]\nmod more { use crate::e::V; fn f() { if true { crate::f::g(); } } }\nfn last() { crate::h::i(); }\n";
    let code = without_tests(text);
    for kept in ["crate::a::X", "crate::c::z", "crate::d::w", "crate::h::i"] {
        assert!(code.contains(kept), "{kept} dropped from {code}");
    }
    for dropped in ["crate::b::y", "crate::e::V", "crate::f::g", "mod tests"] {
        assert!(!code.contains(dropped), "{dropped} kept in {code}");
    }
}

/// The files of `g` left in a cycle (none when the graph runs one way).
fn files_in_cycles(g: &BTreeMap<std::path::PathBuf, BTreeSet<std::path::PathBuf>>) -> BTreeMap<std::path::PathBuf, BTreeSet<std::path::PathBuf>> {
    let mut left = g.clone();
    while let Some(leaf) = left.iter().find(|(_, d)| d.is_empty()).map(|(m, _)| m.clone()) {
        left.remove(&leaf);
        for deps in left.values_mut() {
            deps.remove(&leaf);
        }
    }
    left
}

#[test]
fn files_have_no_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (src, cli) = (root.join("src"), root.join("cli/src"));
    let (lib, program) = (file_graph(&src), file_graph(&cli));
    assert!(lib.len() >= 60 && program.len() >= 30, "{} and {} files", lib.len(), program.len());
    // The graph sees the ties it must: the solver's driver uses its options and its exits pass;
    // the program's engine session its shared arguments.
    let driver = &lib[&src.join("solver/driver.rs")];
    assert!(driver.contains(&src.join("solver/options.rs")) && driver.contains(&src.join("solver/exits.rs")), "{driver:?}");
    assert!(program.values().any(|d| d.contains(&cli.join("args.rs"))), "{program:?}");
    // And it finds a cycle when there is one.
    let mut looped = lib.clone();
    looped.get_mut(&src.join("solver/options.rs")).unwrap().insert(src.join("solver/driver.rs"));
    assert!(!files_in_cycles(&looped).is_empty());
    for g in [lib, program] {
        let left = files_in_cycles(&g);
        assert!(left.is_empty(), "files in a cycle (each with the files of the cycle it names): {left:#?}");
    }
}

#[test]
fn the_path_reader_sees_groups_and_nested_groups() {
    let found = paths_named("use super::{a::{B, c::D}, e};\nlet x = crate::f::g(1); mycrate::h; super::super::i;");
    let names: Vec<String> = found.iter().map(|(r, s)| format!("{r}:{}", s.join("::"))).collect();
    assert_eq!(names, ["crate:f::g", "super:a::B", "super:a::c::D", "super:e", "super:super::i"]);
}

/// The `.rs` files of the repository (but `target/`), relative to its root.
fn repository_rs_files() -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let p = entry.path();
            let name = entry.file_name();
            if p.is_dir() && name != "target" && !name.to_string_lossy().starts_with('.') {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for top in ["src", "cli", "capi", "python", "tests", "examples", "benches"] {
        if root.join(top).is_dir() {
            walk(root, &root.join(top), &mut out);
        }
    }
    out
}

/// Issue 67, item 12: the structure is written in one place per folder. Each folder module's
/// `mod.rs` names every file and folder of it in its documentation (a row or a link
/// `` [`name`] ``, or `` `name.rs` ``), in the library and in the program; and every file the
/// other documents name (`docs/architecture.md`, `docs/library.md`, the crate root's table)
/// exists, so that a file renamed or removed cannot leave them behind.
#[test]
fn every_file_is_named_by_its_module_and_every_file_named_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut unnamed = Vec::new();
    for top in ["src", "cli/src"] {
        for entry in std::fs::read_dir(root.join(top)).unwrap().flatten() {
            let dir = entry.path();
            let folder = entry.file_name().to_string_lossy().to_string();
            if !dir.is_dir() || folder == "tests" || !dir.join("mod.rs").is_file() {
                continue;
            }
            let doc: String = std::fs::read_to_string(dir.join("mod.rs")).unwrap().lines().filter(|l| l.starts_with("//!")).collect::<Vec<_>>().join("\n");
            for member in std::fs::read_dir(&dir).unwrap().flatten() {
                let file = member.file_name().to_string_lossy().to_string();
                let name = match file.strip_suffix(".rs") {
                    Some(n) => n.to_string(),
                    None if member.path().is_dir() => file.clone(),
                    None => continue,
                };
                if name == "mod" || name == "tests" {
                    continue;
                }
                let named = [format!("[`{name}`]"), format!("`{name}.rs`"), format!("| `{name}` |")].iter().any(|form| doc.contains(form.as_str()));
                if !named {
                    unnamed.push(format!("{top}/{folder}/{file}"));
                }
            }
        }
    }
    assert!(unnamed.is_empty(), "files their folder's mod.rs does not name: {unnamed:?}");

    let files = repository_rs_files();
    let mut missing = Vec::new();
    for doc in ["docs/architecture.md", "docs/library.md", "src/lib.rs"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for piece in text.split('`').skip(1).step_by(2) {
            let Some(stem) = piece.strip_suffix(".rs") else { continue };
            if stem.is_empty() || !stem.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '/') {
                continue;
            }
            let exists = files.iter().any(|f| f == piece || f.ends_with(&format!("/{piece}")));
            if !exists {
                missing.push(format!("{doc}: {piece}"));
            }
        }
    }
    assert!(missing.is_empty(), "files the documents name that do not exist: {missing:?}");
}
