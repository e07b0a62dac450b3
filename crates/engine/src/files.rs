//! Whole input files (objects, BTF, FIB and route tables) read through
//! `capture`'s bounded reader: each format has its limit
//! (`SLUICE_MAX_FILE_SIZE` replaces it) and devices are refused by name.

use std::path::Path;

use capture::{Limit, WholeFileError};

/// The bytes of an ELF object, raw bytecode or BTF.
pub(crate) fn object(path: &Path) -> Result<Vec<u8>, WholeFileError> {
    capture::read_whole(path, Limit::OBJECT, None)
}

/// A text file, whole (FIB and route tables).
pub(crate) fn text(path: &Path) -> Result<String, WholeFileError> {
    capture::read_whole_text(path, Limit::TEXT, None)
}
