//! The crate's modules depend on each other in one direction only (rules, index, solver,
//! storage, build, probe, CLI): this test reads `src/` (a module is a file or a folder) and fails
//! on any cycle among the modules' `crate::` paths (comments and test modules aside). `scripts/module-graph` prints the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // A module is a file `src/NAME.rs` or a folder `src/NAME/` (all its files); the program
    // (`src/cli`, `src/main.rs`) and the crate root are not modules of the library's graph.
    fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let p = entry.path();
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
        if name == "lib" || name == "main" || name == "cli" {
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
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
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
    assert!(!g["verify"].contains("solver") && !g["verify"].contains("build"), "the verifier must not use the builder");
    assert!(!g["solver"].contains("storage") && !g["solver"].contains("build"), "the solver is the algorithm only");
    assert!(g["progress"].is_empty(), "progress is a leaf");
}
