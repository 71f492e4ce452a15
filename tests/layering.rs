//! The house's rules, read from the source (docs/architecture.md):
//!
//! - each room of `src/detailed/` uses only the rooms below it
//!   ([`ALLOWED`]);
//! - no import circle between the parts of a room (a part: a file, or a
//!   folder as a whole);
//! - no function is longer than a screen, [`MAX_LINES`].
//!
//! Test code (the `#[cfg(test)]` modules at the end of each file) may use
//! any room: a test checks how the parts fit together.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each room and the rooms its code may use.
const ALLOWED: [(&str, &[&str]); 6] = [
    ("model", &[]),
    ("config", &["model"]),
    ("trainers", &["model", "config"]),
    ("memory", &["model", "config"]),
    ("time", &["model", "config", "memory"]),
    ("plan", &["model", "config", "memory", "time"]),
];

/// The longest function allowed, in lines (its signature to its closing
/// brace): about a screen.
const MAX_LINES: usize = 100;

fn detailed() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/detailed")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// A file's code without its test module, comments and string literals
/// (the test module is the last item, by the crate's convention).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => &text,
    };
    text.lines()
        .map(|l| {
            let l = l.trim_start();
            if l.starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where a file sits: its room and its part of the room (the file's stem,
/// or its folder's name; `""` for the room's own `mod.rs`), and how deep
/// below the part it is (0: the part's own file).
fn place(path: &Path) -> (String, String, usize) {
    let rel = path.strip_prefix(detailed()).unwrap();
    let parts: Vec<&str> = rel.iter().map(|p| p.to_str().unwrap()).collect();
    let room = parts[0].to_string();
    if parts.len() == 2 {
        let stem = parts[1].trim_end_matches(".rs");
        let part = if stem == "mod" { "" } else { stem };
        return (room, part.to_string(), 0);
    }
    let depth = if parts.last() == Some(&"mod.rs") {
        parts.len() - 3
    } else {
        parts.len() - 2
    };
    (room, parts[1].to_string(), depth)
}

/// The parts of a room (its files and folders) and, for each name its
/// `mod.rs` re-exports, the part it comes from.
fn room_names(room: &str) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let dir = detailed().join(room);
    let mut parts = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name != "mod.rs" {
            parts.insert(name.trim_end_matches(".rs").to_string());
        }
    }
    let mut reexports = BTreeMap::new();
    let facade = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
    for stmt in facade.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let (part, names) = rest.split_once("::").unwrap();
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.trim();
            if !name.is_empty() {
                reexports.insert(name.to_string(), part.to_string());
            }
        }
    }
    (parts, reexports)
}

/// Every path a file's code names: `crate::detailed::…` and `super::…`
/// (with `use super::{a, b::c}` lists spread out), as segments.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let text: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut rest = text.as_str();
    while let Some(i) = rest.find(['c', 's']) {
        let tail = &rest[i..];
        let start_ok = i == 0
            || !rest[..i]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        let prefix = ["crate::detailed::", "super::"]
            .into_iter()
            .find(|p| start_ok && tail.starts_with(p));
        let Some(prefix) = prefix else {
            rest = &rest[i + 1..];
            continue;
        };
        let (head, after) = if prefix == "super::" {
            let mut after = tail;
            let mut head = Vec::new();
            while let Some(rest) = after.strip_prefix("super::") {
                head.push("super".to_string());
                after = rest;
            }
            (head, after)
        } else {
            (vec!["crate".to_string()], &tail[prefix.len()..])
        };
        if let Some(list) = after.strip_prefix('{') {
            let list = &list[..list.find('}').unwrap()];
            for item in list.split(',') {
                let item = item.trim();
                if !item.is_empty() {
                    let mut p = head.clone();
                    p.extend(item.split("::").map(|s| s.trim().to_string()));
                    out.push(p);
                }
            }
        } else {
            let path: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut p = head;
            p.extend(path.split("::").filter(|s| !s.is_empty()).map(String::from));
            out.push(p);
        }
        rest = &rest[i + prefix.len()..];
    }
    out
}

/// Resolves a path named in `room`/`part` (at `depth`) to the room and
/// part it reaches: `None` for paths inside the file's own part.
fn target(
    path: &[String],
    room: &str,
    depth: usize,
    names: &BTreeMap<String, (BTreeSet<String>, BTreeMap<String, String>)>,
) -> Option<(String, String)> {
    let (to_room, name) = if path[0] == "crate" {
        (
            path.get(1)?.clone(),
            path.get(2).cloned().unwrap_or_default(),
        )
    } else {
        let supers = path.iter().take_while(|s| *s == "super").count();
        // `super` from a part's own file is the room; from deeper files,
        // one `super` per level climbs inside the part.
        if supers < depth + 1 {
            return None;
        }
        if supers > depth + 1 {
            return Some(("detailed".into(), String::new()));
        }
        (
            room.to_string(),
            path.get(supers).cloned().unwrap_or_default(),
        )
    };
    let Some((parts, reexports)) = names.get(&to_room) else {
        return Some((to_room, String::new()));
    };
    let part = if parts.contains(&name) {
        name
    } else {
        reexports.get(&name).cloned().unwrap_or_default()
    };
    Some((to_room, part))
}

/// The rooms each room's code uses, and the parts each part uses within
/// its room.
#[allow(clippy::type_complexity)]
fn dependencies() -> (
    BTreeMap<String, BTreeSet<(String, String)>>,
    BTreeMap<(String, String), BTreeSet<String>>,
) {
    let names: BTreeMap<_, _> = ALLOWED
        .iter()
        .map(|(room, _)| (room.to_string(), room_names(room)))
        .collect();
    let mut rooms: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut parts: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&detailed()) {
        if file.parent() == Some(detailed().as_path()) {
            continue; // src/detailed/mod.rs: the map, re-exports only
        }
        let (room, part, depth) = place(&file);
        let code = code(&file);
        // A room's mod.rs: its `pub use` lines are the room's map, not uses.
        let code: String = code
            .split(';')
            .filter(|s| !(part.is_empty() && s.trim().starts_with("pub use ")))
            .collect::<Vec<_>>()
            .join(";");
        for path in paths(&code) {
            let Some((to_room, to_part)) = target(&path, &room, depth, &names) else {
                continue;
            };
            let at = file.strip_prefix(detailed()).unwrap().display().to_string();
            if to_room != room {
                rooms.entry(room.clone()).or_default().insert((to_room, at));
            } else if to_part != part {
                parts
                    .entry((room.clone(), part.clone()))
                    .or_default()
                    .insert(to_part);
            }
        }
    }
    (rooms, parts)
}

#[test]
fn each_room_uses_only_the_rooms_below_it() {
    let (rooms, _) = dependencies();
    let mut wrong = Vec::new();
    for (room, uses) in &rooms {
        let allowed = ALLOWED.iter().find(|(r, _)| r == room).unwrap().1;
        for (to, at) in uses {
            if !allowed.contains(&to.as_str()) {
                wrong.push(format!("{at} uses {to}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports running up the rooms:\n{}",
        wrong.join("\n")
    );
    // The rule can fail: memory is read by time, and plan by nobody.
    assert!(rooms["time"].iter().any(|(to, _)| to == "memory"));
    assert!(rooms.values().flatten().all(|(to, _)| to != "plan"));
}

#[test]
fn no_import_circle_between_the_parts_of_a_room() {
    let (_, parts) = dependencies();
    // Depth-first search for a cycle, naming it.
    fn visit(
        node: &(String, String),
        graph: &BTreeMap<(String, String), BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<(String, String)>,
    ) -> Option<String> {
        if let Some(i) = stack.iter().position(|p| *p == node.1) {
            return Some(format!(
                "{}: {} -> {}",
                node.0,
                stack[i..].join(" -> "),
                node.1
            ));
        }
        if !done.insert(node.clone()) {
            return None;
        }
        stack.push(node.1.clone());
        for next in graph.get(node).into_iter().flatten() {
            let found = visit(&(node.0.clone(), next.clone()), graph, stack, done);
            if found.is_some() {
                return found;
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    for node in parts.keys() {
        if let Some(cycle) = visit(node, &parts, &mut Vec::new(), &mut done) {
            panic!("import circle in {cycle}");
        }
    }
    // The graph is real: the timeline reads the ZeRO-3 walk and the states.
    let timeline = &parts[&("memory".to_string(), "timeline".to_string())];
    assert!(timeline.contains("zero3") && timeline.contains("states"));
}

#[test]
fn no_function_is_longer_than_a_screen() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut long = Vec::new();
    for file in rust_files(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            let is_fn = [
                "fn ",
                "pub fn ",
                "pub(crate) fn ",
                "const fn ",
                "pub const fn ",
            ]
            .iter()
            .any(|p| t.starts_with(p));
            if !is_fn {
                continue;
            }
            // Count braces to the function's end (strings and comments
            // with braces are rare enough in this crate to ignore).
            let (mut depth, mut started) = (0i32, false);
            for (j, l) in lines[i..].iter().enumerate() {
                let l = l.split("//").next().unwrap();
                if !started && l.trim_end().ends_with(';') {
                    break;
                }
                for c in l.chars() {
                    match c {
                        '{' => (depth, started) = (depth + 1, true),
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                if started && depth <= 0 {
                    if j + 1 > MAX_LINES {
                        let at = file.strip_prefix(&src).unwrap().display();
                        long.push(format!("{at}:{}: {} lines", i + 1, j + 1));
                    }
                    break;
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions longer than {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}
