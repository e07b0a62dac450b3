//! Whole input files (objects, bytecode, flows, routes, tc
//! configurations, assembly) read through `capture`'s bounded reader: each
//! format has its limit (`SLUICE_MAX_FILE_SIZE` replaces it), devices are
//! refused by name, and once a SIGINT or SIGTERM has set the stop flag
//! (when the command installed its handlers) reading ends.

use std::path::Path;

use capture::Limit;

/// The bytes of an ELF object, raw bytecode or BTF.
pub(crate) fn object(path: &Path) -> Result<Vec<u8>, String> {
    capture::read_whole(path, Limit::OBJECT, Some(crate::signals::flag()))
        .map_err(|e| e.to_string())
}

/// A text file, whole (flows, routes, tc lines, assembly, JSON).
pub(crate) fn text(path: &Path) -> Result<String, String> {
    capture::read_whole_text(path, Limit::TEXT, Some(crate::signals::flag()))
        .map_err(|e| e.to_string())
}
