//! Whole input files (objects, bytecode, flows, routes, assembly, JSON)
//! read by the engine's bounded reader ([`engine::files`]), which ends
//! reading once a SIGINT or SIGTERM has set the command's stop flag (when
//! the command installed its handlers); errors as the command line prints
//! them.

use std::path::Path;

/// The bytes of an ELF object, raw bytecode or BTF.
pub(crate) fn object(path: &Path) -> Result<Vec<u8>, String> {
    engine::files::object(path, Some(crate::signals::flag())).map_err(|e| e.to_string())
}

/// A text file, whole (flows, routes, assembly, JSON).
pub(crate) fn text(path: &Path) -> Result<String, String> {
    engine::files::text(path, Some(crate::signals::flag())).map_err(|e| e.to_string())
}
