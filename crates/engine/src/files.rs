//! Whole input files (objects, BTF, FIB and route tables, flows, tc
//! lines, assembly) read through `capture`'s bounded reader: each format
//! has its limit (`SLUICE_MAX_FILE_SIZE` replaces it), devices are
//! refused by name, and once `stop` is set (a front end's SIGINT or
//! SIGTERM) reading ends.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use capture::{Limit, WholeFileError};

/// The bytes of an ELF object, raw bytecode or BTF.
pub fn object(path: &Path, stop: Option<&'static AtomicBool>) -> Result<Vec<u8>, WholeFileError> {
    capture::read_whole(path, Limit::OBJECT, stop)
}

/// A text file, whole.
pub fn text(path: &Path, stop: Option<&'static AtomicBool>) -> Result<String, WholeFileError> {
    capture::read_whole_text(path, Limit::TEXT, stop)
}
