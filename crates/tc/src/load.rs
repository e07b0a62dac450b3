//! Configurations built from files: a file of tc lines (any `tc -batch`
//! file, or the one `sluice tc` keeps) read whole through `capture`'s
//! bounded reader and run line by line into a [`Config`];
//! [`Config::load_saved`] reads the file `sluice tc` keeps as
//! [`read_config`](crate::read_config) allows.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use capture::{Limit, WholeFileError};

use crate::cmdline::ShowOptions;
use crate::conf_file::ConfFileError;
use crate::config::Config;

/// Why a configuration file gave no configuration.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file not read (missing, too large, a device, not UTF-8, stopped).
    #[error("{0}")]
    File(#[from] WholeFileError),
    /// The file `sluice tc` keeps refused (a link, not its owner's, ...).
    #[error("{0}")]
    Saved(#[from] ConfFileError),
    /// A line tc would refuse, as tc words it.
    #[error("{path}: {reason}", path = path.display())]
    Line { path: PathBuf, reason: String },
}

/// The text of a file of tc lines (`-`: standard input, as tc reads a
/// batch), read whole; with `stop`, reading ends once it is set.
pub fn read_lines(path: &Path, stop: Option<&'static AtomicBool>) -> Result<String, LoadError> {
    Ok(capture::read_whole_text(path, Limit::TEXT, stop)?)
}

impl Config {
    /// The configuration `text`'s lines build, `devices`' real indexes
    /// known before the first line (ports of a datapath); `origin` names
    /// the lines in errors.
    pub fn from_lines(
        text: &str,
        origin: &Path,
        devices: &[(String, u32)],
    ) -> Result<Config, LoadError> {
        let mut config = Config::default();
        for (name, index) in devices {
            config.devices.set(name, *index);
        }
        config
            .run_batch(text, ShowOptions::default())
            .map_err(|e| LoadError::Line {
                path: origin.to_path_buf(),
                reason: e.to_string(),
            })?;
        Ok(config)
    }

    /// The configuration of the file of tc lines at `path` ([`read_lines`],
    /// then [`Config::from_lines`]).
    pub fn load(
        path: &Path,
        devices: &[(String, u32)],
        stop: Option<&'static AtomicBool>,
    ) -> Result<Config, LoadError> {
        Config::from_lines(&read_lines(path, stop)?, path, devices)
    }

    /// The configuration `sluice tc` keeps at `path`, read as
    /// [`read_config`](crate::read_config) allows (missing: empty).
    pub fn load_saved(path: &Path) -> Result<Config, LoadError> {
        let text = crate::conf_file::read_config(path)?;
        Config::from_lines(&text, path, &[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tc-load-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rules.tc");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_file_of_lines_builds_its_configuration_with_known_devices() {
        let path = file("good", "qdisc add dev p0 clsact\nqdisc add dev p1 clsact\n");
        let c = Config::load(&path, &[("p1".into(), 7)], None).unwrap();
        assert_eq!(c.qdiscs().count(), 2);
        assert_eq!(c.devices.get("p1"), Some(7));
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_bad_line_is_named_with_the_file() {
        let path = file("bad", "qdisc add dev p0 nonsense\n");
        let e = Config::load(&path, &[], None).unwrap_err();
        assert!(matches!(e, LoadError::Line { .. }), "{e:?}");
        assert!(
            e.to_string().starts_with(&format!("{}: ", path.display())),
            "{e}"
        );
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_missing_file_is_the_readers_error_but_a_missing_saved_one_is_empty() {
        let missing = std::env::temp_dir().join(format!("tc-load-{}-none", std::process::id()));
        assert!(matches!(
            Config::load(&missing, &[], None),
            Err(LoadError::File(_))
        ));
        assert_eq!(Config::load_saved(&missing).unwrap().qdiscs().count(), 0);
    }
}
