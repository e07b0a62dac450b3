//! Whole input files (objects, BTF, FIB and route tables) read through
//! `io`'s bounded reader: each format has its limit
//! (`SLUICE_MAX_FILE_SIZE` replaces it) and devices are refused by name.

use std::path::Path;

use io::{Limit, WholeFileError};

/// The bytes of an ELF object, raw bytecode or BTF.
pub(crate) fn object(path: &Path) -> Result<Vec<u8>, WholeFileError> {
    io::read_whole(path, Limit::OBJECT, None)
}

/// A text file, whole (FIB and route tables).
pub(crate) fn text(path: &Path) -> Result<String, WholeFileError> {
    io::read_whole_text(path, Limit::TEXT, None)
}
