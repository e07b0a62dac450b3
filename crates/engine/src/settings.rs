//! [`Settings`]: what `--set NAME=VALUE`, `--map-size NAME=N`,
//! `--map-size-default N` and `--type`/`--attach-type` say about an object
//! before it loads (into the VM, the kernel, or both), and how they apply.

use runtime::LoadOptions;
use serde::{Deserialize, Serialize};

/// Globals, map sizes and program types given before loading an object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Global variables (volatile const or not): `NAME=VALUE`.
    pub set: Vec<String>,
    /// Maps' max_entries: `NAME=N`.
    pub map_size: Vec<String>,
    /// max_entries of every map that declares 0 and has no `map_size`.
    pub map_size_default: Option<u32>,
    /// Program types: `[PROG=]TYPE` (xdp, tc, socket, ...).
    pub prog_type: Vec<String>,
    /// Expected attach types with `prog_type`: `[PROG=]TYPE`.
    pub attach_type: Vec<String>,
}

/// Why settings do not apply to an object.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("{option} takes NAME=VALUE, not `{given}`")]
    NotPair { option: &'static str, given: String },
    #[error("`{0}` is not an integer")]
    NotInteger(String),
    #[error("--attach-type {given}: give the program type too, with --type {prog}TYPE", prog = prog.as_ref().map(|p| format!("{p}=")).unwrap_or_default())]
    AttachWithoutType { given: String, prog: Option<String> },
    /// The object refused a program type.
    #[error("{0}")]
    ProgramType(#[from] obj::ProgramTypeError),
    #[error("--map-size {0}: the object has no such map")]
    NoSuchMap(String),
    #[error("--map-size {0}: out of range")]
    SizeOutOfRange(String),
    #[error("--map-size-default: 0 is no size")]
    ZeroDefault,
}

fn split_pair<'a>(s: &'a str, option: &'static str) -> Result<(&'a str, &'a str), SettingsError> {
    s.split_once('=').ok_or_else(|| SettingsError::NotPair {
        option,
        given: s.to_string(),
    })
}

/// An integer in decimal or `0x` hex, optionally negative.
pub fn parse_int(s: &str) -> Result<i128, SettingsError> {
    let t = s.trim();
    let (neg, body) = t.strip_prefix('-').map_or((false, t), |b| (true, b));
    let v = match body.strip_prefix("0x") {
        Some(h) => i128::from_str_radix(h, 16),
        None => body.parse(),
    }
    .map_err(|_| SettingsError::NotInteger(s.to_string()))?;
    Ok(if neg { -v } else { v })
}

/// `[PROG=]VALUE`: the program (if named) and the value.
fn split_prog(s: &str) -> (Option<&str>, &str) {
    match s.split_once('=') {
        Some((p, v)) => (Some(p), v),
        None => (None, s),
    }
}

impl Settings {
    /// Gives programs the types of `prog_type` and `attach_type`.
    pub fn retype(&self, object: &mut obj::Object) -> Result<(), SettingsError> {
        for a in &self.attach_type {
            let (prog, _) = split_prog(a);
            if !self.prog_type.iter().any(|t| split_prog(t).0 == prog) {
                return Err(SettingsError::AttachWithoutType {
                    given: a.clone(),
                    prog: prog.map(str::to_string),
                });
            }
        }
        for t in &self.prog_type {
            let (prog, ty) = split_prog(t);
            let attach = self
                .attach_type
                .iter()
                .map(|a| split_prog(a))
                .find(|(p, _)| *p == prog)
                .map(|(_, a)| a);
            object
                .set_program_type(prog, ty, attach)
                .map_err(SettingsError::ProgramType)?;
        }
        Ok(())
    }

    /// Gives programs their types, and adds the globals and map sizes to
    /// `opts`; map names are checked against `object`.
    pub fn apply(
        &self,
        object: &mut obj::Object,
        opts: &mut LoadOptions,
    ) -> Result<(), SettingsError> {
        self.retype(object)?;
        for s in &self.set {
            let (name, value) = split_pair(s, "--set")?;
            opts.globals.push((name.to_string(), parse_int(value)?));
        }
        for s in &self.map_size {
            let (name, n) = split_pair(s, "--map-size")?;
            if object.map_index(name).is_none() {
                return Err(SettingsError::NoSuchMap(name.to_string()));
            }
            let n = u32::try_from(parse_int(n)?)
                .map_err(|_| SettingsError::SizeOutOfRange(name.to_string()))?;
            opts.map_sizes.insert(name.to_string(), n);
        }
        if self.map_size_default == Some(0) {
            return Err(SettingsError::ZeroDefault);
        }
        opts.map_size_default = self.map_size_default;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_int("0x10"), Ok(16));
        assert_eq!(parse_int(" -3 "), Ok(-3));
        assert_eq!(
            parse_int("1x").unwrap_err().to_string(),
            "`1x` is not an integer"
        );
    }
}
