//! The arguments of `Program.run` besides its packets ([`crate::source`]):
//! which engine runs them ([`vm_engine`]).

use engine::VmEngine;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `engine=`: `"jit"` or `"interpreter"`.
pub(crate) fn vm_engine(name: &str) -> PyResult<VmEngine> {
    match name {
        "jit" => Ok(VmEngine::Jit),
        "interpreter" => Ok(VmEngine::Interpreter),
        other => Err(PyValueError::new_err(format!(
            "engine={other:?}: \"jit\" or \"interpreter\""
        ))),
    }
}
