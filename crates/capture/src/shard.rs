//! A capture list planned as shards: paths and globs expanded in a stable
//! order, each file smaller than the split size one shard, a larger one
//! cut into byte ranges of about that size (see docs/shards.md).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::IoError;
use crate::input::is_stdin;

/// A piece of work over a capture: the records of `path` whose first byte
/// lies in `[start, end)`. A whole file is the range `[0, size)`; the
/// range starting at 0 holds the file's header.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shard {
    pub path: PathBuf,
    pub start: u64,
    pub end: u64,
    /// The file's size when planned.
    pub size: u64,
}

impl Shard {
    /// Whether the shard is its whole file.
    pub fn is_whole(&self) -> bool {
        self.start == 0 && self.end >= self.size
    }

    /// The shard as text: `PATH` for a whole file, `PATH [START, END)`.
    pub fn describe(&self) -> String {
        match self.is_whole() {
            true => self.path.display().to_string(),
            false => format!("{} [{}, {})", self.path.display(), self.start, self.end),
        }
    }
}

/// A capture list that cannot be planned, or shards that cannot be read
/// or checked.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("`{pattern}`: not a glob pattern: {reason}")]
    Pattern { pattern: String, reason: String },
    #[error("`{pattern}`: no file matches")]
    NoMatch { pattern: String },
    #[error("{}: {reason}", path.display())]
    File { path: PathBuf, reason: String },
    #[error("split size `{text}`: not a size (bytes, or a number with K, M or G; more than 0)")]
    BadSplit { text: String },
    #[error(
        "{} [{start}, ...): the shards of a file must be given in order, each starting where the one before ends",
        path.display()
    )]
    NotContiguous { path: PathBuf, start: u64 },
    #[error(transparent)]
    Capture(#[from] IoError),
}

/// `64M`, `1G`, `4096`: a split size in bytes (binary multiples), not 0.
pub fn parse_split(text: &str) -> Result<u64, ShardError> {
    crate::whole::parse_size(text)
        .filter(|&n| n > 0)
        .ok_or_else(|| ShardError::BadSplit { text: text.into() })
}

/// Whether `input` is a glob pattern rather than a path.
fn is_pattern(input: &str) -> bool {
    input.contains(['*', '?', '['])
}

/// The files of `inputs`, in the order given; each pattern's matches
/// sorted by path.
fn expand(inputs: &[impl AsRef<str>]) -> Result<Vec<PathBuf>, ShardError> {
    let mut files = Vec::new();
    for input in inputs {
        let input = input.as_ref();
        if !is_pattern(input) {
            files.push(PathBuf::from(input));
            continue;
        }
        let paths = glob::glob(input).map_err(|e| ShardError::Pattern {
            pattern: input.into(),
            reason: e.to_string(),
        })?;
        let mut matched = Vec::new();
        for path in paths {
            let path = path.map_err(|e| ShardError::File {
                path: e.path().to_path_buf(),
                reason: crate::error::cause(e.error()),
            })?;
            matched.push(path);
        }
        if matched.is_empty() {
            return Err(ShardError::NoMatch {
                pattern: input.into(),
            });
        }
        matched.sort();
        files.extend(matched);
    }
    Ok(files)
}

/// The size of `path`, a regular file (a stream cannot be cut).
fn size_of(path: &Path) -> Result<u64, ShardError> {
    let file = |reason: String| ShardError::File {
        path: path.to_path_buf(),
        reason,
    };
    if is_stdin(path) {
        return Err(file("standard input cannot be cut into shards".into()));
    }
    let meta = std::fs::metadata(path).map_err(|e| file(crate::error::cause(&e)))?;
    if !meta.is_file() {
        return Err(file(
            "not a regular file (only files are cut into shards)".into(),
        ));
    }
    Ok(meta.len())
}

/// The shards of `inputs` (paths and glob patterns, in the order given, a
/// pattern's matches sorted): a file of at most `split_bytes` bytes is
/// one shard, a larger one `ceil(size / split_bytes)` byte ranges of
/// nearly equal size, the first from 0. `split_bytes` 0 is taken as 1.
pub fn plan(inputs: &[impl AsRef<str>], split_bytes: u64) -> Result<Vec<Shard>, ShardError> {
    let split = split_bytes.max(1);
    let mut shards = Vec::new();
    for path in expand(inputs)? {
        let size = size_of(&path)?;
        let n = size.div_ceil(split).max(1);
        let cut = |i: u64| (u128::from(size) * u128::from(i) / u128::from(n)) as u64;
        for i in 0..n {
            shards.push(Shard {
                path: path.clone(),
                start: cut(i),
                end: cut(i + 1),
                size,
            });
        }
    }
    Ok(shards)
}
