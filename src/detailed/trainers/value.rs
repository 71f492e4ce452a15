//! The shared part of the readers: one tree for YAML, TOML and JSON, its
//! leaves by key path, typed reads that name the key path when a value is
//! wrong, and what a reading found (settings, trainer defaults, ignored
//! keys).

use super::pending::{self, Pending};
use std::fmt;

/// A value of a configuration file, whatever its syntax.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`, `~`, an empty YAML value.
    Null,
    /// `true`/`false` (YAML 1.1's `True`/`False` too).
    Bool(bool),
    /// A number as written (`1e9`, `500_000`, `3e-4`).
    Num(String),
    /// A string.
    Str(String),
    /// A list (kept whole: a leaf).
    List(Vec<Value>),
    /// A table, keys in the file's order.
    Map(Vec<(String, Value)>),
}

/// The deepest nesting a file may have: trainers' files nest 4 deep.
pub const MAX_DEPTH: usize = 32;

/// The largest file read, in bytes: trainers' files are a few KB.
pub const MAX_BYTES: usize = 1 << 20;

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Num(n) | Value::Str(n) => f.write_str(n),
            Value::List(items) => {
                let parts: Vec<String> = items.iter().map(Value::to_string).collect();
                write!(f, "[{}]", parts.join(","))
            }
            Value::Map(_) => f.write_str("{…}"),
        }
    }
}

impl Value {
    /// The text of a scalar (`"auto"`, `"bf16"`, `"8"`), if it is one.
    pub fn text(&self) -> Option<String> {
        match self {
            Value::Num(s) | Value::Str(s) => Some(s.trim().to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    /// DeepSpeed's and the HF integration's `"auto"`: a value another file
    /// fills in.
    pub fn is_auto(&self) -> bool {
        matches!(self, Value::Str(s) if s.eq_ignore_ascii_case("auto"))
    }

    /// The items of a list, or a comma-separated string as one (`"q_proj,v_proj"`).
    pub fn items(&self) -> Vec<String> {
        match self {
            Value::List(v) => v.iter().filter_map(Value::text).collect(),
            Value::Null => Vec::new(),
            other => other
                .text()
                .unwrap_or_default()
                .split([',', ' '])
                .map(|s| s.trim().trim_matches(['"', '\'']).to_string())
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }
}

/// What is wrong with a file: the key path and the sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// The key path (`zero_optimization.stage`), empty for the whole file.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl ReadError {
    /// An error at `key`.
    pub fn at(key: &str, message: impl Into<String>) -> Self {
        Self {
            key: key.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

/// A number as the trainers' parsers read it: integers with `_`
/// separators (PyYAML's YAML 1.1, `500_000`), `1e9`, `2.0`.
pub fn number(text: &str) -> Option<f64> {
    let t = text.trim().replace('_', "");
    let x: f64 = t.parse().ok()?;
    x.is_finite().then_some(x)
}

/// A boolean as Python's parsers read it: `true`, `True`, `1`, `yes`.
pub fn boolean(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" | "none" => Some(false),
        _ => None,
    }
}

/// A file's leaves by key path, each taken at most once: what a reader
/// does not take is listed as ignored, so nothing is dropped silently.
#[derive(Debug, Default)]
pub struct Doc {
    entries: Vec<(String, Value, bool)>,
}

impl Doc {
    /// The leaves of `root` (tables flattened to `a.b.c`; lists are leaves).
    pub fn new(root: &Value) -> Self {
        let mut doc = Doc::default();
        doc.flatten("", root);
        doc
    }

    /// Leaves in order, from `(key, value)` pairs (command lines).
    pub fn from_pairs(pairs: Vec<(String, Value)>) -> Self {
        Doc {
            entries: pairs.into_iter().map(|(k, v)| (k, v, false)).collect(),
        }
    }

    fn flatten(&mut self, prefix: &str, v: &Value) {
        match v {
            Value::Map(items) if !items.is_empty() => {
                for (k, child) in items {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    self.flatten(&key, child);
                }
            }
            other => self
                .entries
                .push((prefix.to_string(), other.clone(), false)),
        }
    }

    /// Whether `key` is in the file (taken or not).
    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, ..)| k == key)
    }

    /// The value at `key`, without taking it.
    pub fn peek(&self, key: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|(k, ..)| k == key)
            .map(|(_, v, _)| v)
    }

    /// Takes the value at `key` (the last one if repeated: later wins).
    pub fn take(&mut self, key: &str) -> Option<Value> {
        let mut found = None;
        for (k, v, taken) in self.entries.iter_mut() {
            if k == key {
                *taken = true;
                found = Some(v.clone());
            }
        }
        found
    }

    /// Takes `key` as a whole number (`"auto"` and `null` read as absent).
    pub fn uint(&mut self, key: &str) -> Result<Option<u64>, ReadError> {
        match self.take(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) if v.is_auto() => Ok(None),
            Some(v) => uint_of(key, &v).map(Some),
        }
    }

    /// Takes `key` as a boolean (`null` reads as absent).
    pub fn flag(&mut self, key: &str) -> Result<Option<bool>, ReadError> {
        match self.take(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .text()
                .as_deref()
                .and_then(boolean)
                .map(Some)
                .ok_or_else(|| ReadError::at(key, format!("expected true or false, got {v}"))),
        }
    }

    /// Takes `key` as text (`null` reads as absent).
    pub fn text(&mut self, key: &str) -> Result<Option<String>, ReadError> {
        match self.take(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .text()
                .map(Some)
                .ok_or_else(|| ReadError::at(key, format!("expected a single value, got {v}"))),
        }
    }

    /// The keys taken so far, with their values.
    pub fn taken(&self) -> Vec<(String, Value)> {
        self.entries
            .iter()
            .filter(|(_, _, taken)| *taken)
            .map(|(k, v, _)| (k.clone(), v.clone()))
            .collect()
    }

    /// The keys not taken yet, with their values, in the file's order.
    pub fn rest(&mut self) -> Vec<(String, Value)> {
        let rest = self
            .entries
            .iter()
            .filter(|(_, _, taken)| !taken)
            .map(|(k, v, _)| (k.clone(), v.clone()))
            .collect();
        for e in self.entries.iter_mut() {
            e.2 = true;
        }
        rest
    }
}

/// `v` as a whole number, or an error naming `key`.
pub fn uint_of(key: &str, v: &Value) -> Result<u64, ReadError> {
    v.text()
        .as_deref()
        .and_then(number)
        .filter(|x| *x >= 0.0 && x.fract() == 0.0 && *x < 1e15)
        .map(|x| x as u64)
        .ok_or_else(|| ReadError::at(key, format!("expected a whole number, got {v}")))
}

/// One setting a file asked for: the key, its value, and the flag it
/// becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Set {
    /// The key path as the file spells it.
    pub key: String,
    /// Its value as written.
    pub value: String,
    /// The flag it sets (`--micro-batch`).
    pub flag: &'static str,
    /// The flag's value (empty for a switch such as `--sp`).
    pub arg: String,
    /// For a trainer default (the key absent): where the trainer sets it.
    pub default_from: Option<&'static str>,
}

/// A key read and not priced, with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignored {
    /// The key path.
    pub key: String,
    /// Its value as written.
    pub value: String,
    /// Why it is not priced.
    pub reason: String,
}

/// What one file asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Out {
    /// Settings, in order: flags applied before the user's own.
    pub set: Vec<Set>,
    /// Keys read and not priced.
    pub ignored: Vec<Ignored>,
    /// A model the file names that no preset matches: (key, name).
    pub unknown_model: Option<(String, String)>,
}

impl Out {
    /// Whether a key set `flag`.
    pub fn sets(&self, flag: &str) -> bool {
        self.set.iter().any(|s| s.flag == flag)
    }

    /// The argument the last key setting `flag` gave it.
    pub fn arg(&self, flag: &str) -> Option<&str> {
        self.set
            .iter()
            .rev()
            .find(|s| s.flag == flag)
            .map(|s| s.arg.as_str())
    }

    /// The last value set for `flag`, as a whole number.
    pub fn uint_arg(&self, flag: &str) -> Option<u64> {
        self.arg(flag).and_then(|a| a.parse().ok())
    }

    /// `key` (written `value`) sets `flag arg`.
    pub fn set(
        &mut self,
        key: &str,
        value: impl fmt::Display,
        flag: &'static str,
        arg: impl fmt::Display,
    ) {
        self.set.push(Set {
            key: key.to_string(),
            value: value.to_string(),
            flag,
            arg: arg.to_string(),
            default_from: None,
        });
    }

    /// The trainer's default for `key`, absent from the file, sets `flag arg`.
    pub fn trainer_default(
        &mut self,
        key: &str,
        value: &str,
        flag: &'static str,
        arg: &str,
        source: &'static str,
    ) {
        self.set.push(Set {
            key: key.to_string(),
            value: value.to_string(),
            flag,
            arg: arg.to_string(),
            default_from: Some(source),
        });
    }

    /// `key` is read and not priced, for `reason`.
    pub fn ignore(&mut self, key: &str, value: impl fmt::Display, reason: impl Into<String>) {
        self.ignored.push(Ignored {
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        });
    }

    /// `key` asks for a setting other helpers are adding: a flag once the
    /// pending table switches it on, ignored with the reason until then.
    pub fn pending(
        &mut self,
        key: &str,
        value: impl fmt::Display,
        what: Pending,
        arg: impl fmt::Display,
    ) {
        let p = pending::lookup(what);
        if p.active {
            self.set(key, value, p.flag, arg);
        } else {
            self.ignore(
                key,
                value,
                format!("{} is not priced yet ({} {arg} to come)", p.feature, p.flag),
            );
        }
    }

    /// A model the file names that no preset matches: kept for the
    /// command line's message, and listed.
    pub fn unknown(&mut self, key: &str, name: &str) {
        self.unknown_model = Some((key.to_string(), name.to_string()));
        self.ignore(key, name, "not one of membudget's presets: the model comes from --config PATH (its config.json) or --model");
    }

    /// Whether a setting for `flag` has been made.
    pub fn has(&self, flag: &str) -> bool {
        self.set.iter().any(|s| s.flag == flag)
    }
}

/// Lists every key a reader left: those its trainer's table names, with the
/// table's reason; any other as not a memory setting this reader knows.
pub fn finish(doc: &mut Doc, out: &mut Out, trainer: &str, table: &[(&str, &str)]) {
    // Keys read that set nothing (a switch that is off, a value equal to
    // membudget's default): listed too.
    for (key, value) in doc.taken() {
        let last = key.rsplit('.').next().unwrap_or(&key);
        let named = |k: &str| k == key || k.contains(last);
        if !out.set.iter().any(|s| named(&s.key)) && !out.ignored.iter().any(|i| named(&i.key)) {
            out.ignore(
                &key,
                value,
                "read: it asks for nothing membudget prices (off, or as priced without it)",
            );
        }
    }
    for (key, value) in doc.rest() {
        let reason = table
            .iter()
            .find(|(pattern, _)| matches(pattern, &key))
            .map(|(_, r)| r.to_string())
            .unwrap_or_else(|| {
                format!("not a setting of {trainer} that changes memory in membudget's reading")
            });
        out.ignore(&key, value, reason);
    }
}

/// `pattern` matches `key`: exactly, as a prefix ending in `*`
/// (`fp16.*`), or as a suffix after a leading `*` (`*.pipeline_parallel_microbatches`).
pub fn matches(pattern: &str, key: &str) -> bool {
    if let Some(suffix) = pattern.strip_prefix('*').filter(|s| !s.is_empty()) {
        return key.ends_with(suffix);
    }
    match pattern.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => pattern == key,
    }
}
