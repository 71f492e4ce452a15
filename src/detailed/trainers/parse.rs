//! The three syntaxes into one [`Value`] tree, and a launch command line
//! into words, each refusing what it cannot read with the place it stopped.

use super::value::{ReadError, Value, MAX_DEPTH};

/// A YAML file (the first document). Plain scalars are kept as text so the
/// readers apply PyYAML's YAML 1.1 reading (`500_000` is a number, `True`
/// a boolean) where YAML 1.2 would not.
pub fn yaml(text: &str) -> Result<Value, ReadError> {
    let docs = yaml_rust2::YamlLoader::load_from_str(text)
        .map_err(|e| ReadError::at("", format!("not valid YAML: {e}")))?;
    match docs.into_iter().next() {
        None => Ok(Value::Map(Vec::new())),
        Some(doc) => from_yaml(&doc, 0, ""),
    }
}

fn from_yaml(y: &yaml_rust2::Yaml, depth: usize, at: &str) -> Result<Value, ReadError> {
    use yaml_rust2::Yaml;
    if depth > MAX_DEPTH {
        return Err(ReadError::at(
            at,
            format!("nested more than {MAX_DEPTH} deep"),
        ));
    }
    Ok(match y {
        Yaml::Null | Yaml::BadValue => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::Num(i.to_string()),
        Yaml::Real(s) => Value::Num(s.clone()),
        Yaml::String(s) => Value::Str(s.clone()),
        Yaml::Alias(_) => return Err(ReadError::at(at, "YAML aliases are not read")),
        Yaml::Array(items) => Value::List(
            items
                .iter()
                .map(|i| from_yaml(i, depth + 1, at))
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(h) => {
            let mut items = Vec::with_capacity(h.len());
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) | Yaml::Real(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    Yaml::Null => "null".into(),
                    _ => return Err(ReadError::at(at, "a key must be a plain value")),
                };
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                items.push((key, from_yaml(v, depth + 1, &path)?));
            }
            Value::Map(items)
        }
    })
}

/// A TOML file (torchtitan).
pub fn toml(text: &str) -> Result<Value, ReadError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        ReadError::at("", format!("not valid TOML: {}", e.message()))
    })?;
    Ok(from_toml(&toml::Value::Table(table), 0))
}

fn from_toml(v: &toml::Value, depth: usize) -> Value {
    match v {
        _ if depth > MAX_DEPTH => Value::Null,
        toml::Value::String(s) => Value::Str(s.clone()),
        toml::Value::Integer(i) => Value::Num(i.to_string()),
        toml::Value::Float(f) => Value::Num(f.to_string()),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::Str(d.to_string()),
        toml::Value::Array(a) => Value::List(a.iter().map(|x| from_toml(x, depth + 1)).collect()),
        toml::Value::Table(t) => Value::Map(
            t.iter()
                .map(|(k, x)| (k.clone(), from_toml(x, depth + 1)))
                .collect(),
        ),
    }
}

/// A JSON file (DeepSpeed).
pub fn json(text: &str) -> Result<Value, ReadError> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| ReadError::at("", format!("not valid JSON: {e}")))?;
    Ok(from_json(&v))
}

fn from_json(v: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => Value::Num(n.to_string()),
        J::String(s) => Value::Str(s.clone()),
        J::Array(a) => Value::List(a.iter().map(from_json).collect()),
        J::Object(o) => Value::Map(o.iter().map(|(k, x)| (k.clone(), from_json(x))).collect()),
    }
}

/// A command line as a shell splits it: `#` comment lines dropped,
/// backslash-newline joined, quotes removed, `$VAR` kept as written.
pub fn words(text: &str) -> Result<Vec<String>, ReadError> {
    let joined: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\\\n", " ");
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in joined.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(ReadError::at("", "a quote is not closed"));
    }
    if in_word {
        out.push(word);
    }
    Ok(out)
}
