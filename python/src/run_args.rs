//! The arguments of `Program.run` made into the engine's specs: where the
//! packets come from ([`source`]) and which engine runs them ([`vm_engine`]).

use engine::{Origin, SourceSpec, VmEngine};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyTuple};

/// The source of exactly one of `pcap`, `packets`, `gen`.
pub(crate) fn source(
    pcap: Option<std::path::PathBuf>,
    packets: Option<&Bound<'_, PyAny>>,
    gen_: Option<&Bound<'_, PyAny>>,
) -> PyResult<SourceSpec> {
    match (pcap, packets, gen_) {
        (Some(path), None, None) => Ok(SourceSpec::capture(path)),
        (None, Some(packets), None) => Ok(SourceSpec::new(Origin::Frames {
            frames: frames(packets)?,
        })),
        (None, None, Some(specs)) => Ok(SourceSpec::generated(gen_specs(specs)?)),
        _ => Err(PyTypeError::new_err(
            "run() takes exactly one of pcap=, packets=, gen=",
        )),
    }
}

/// `gen=`: one spec (`"udp,count=10"`) or a list of them (streams mixed).
fn gen_specs(specs: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    match specs.extract::<String>() {
        Ok(one) => Ok(vec![one]),
        Err(_) => specs.extract::<Vec<String>>(),
    }
}

/// `packets=`: Ethernet frames, each `bytes` (or `bytearray`), a
/// `(timestamp_ns, bytes)` pair, or an object `bytes()` takes (a scapy
/// packet, whose `time` gives the timestamp).
fn frames(packets: &Bound<'_, PyAny>) -> PyResult<Vec<(u64, Vec<u8>)>> {
    let mut out = Vec::new();
    for item in packets.try_iter()? {
        out.push(frame(&item?)?);
    }
    Ok(out)
}

fn frame(item: &Bound<'_, PyAny>) -> PyResult<(u64, Vec<u8>)> {
    if let Ok(b) = item.cast::<PyBytes>() {
        return Ok((0, b.as_bytes().to_vec()));
    }
    if let Ok(b) = item.cast::<PyByteArray>() {
        return Ok((0, b.to_vec()));
    }
    if let Ok(pair) = item.cast::<PyTuple>() {
        let (ts, data): (u64, Bound<'_, PyAny>) = pair.extract()?;
        return Ok((ts, frame(&data)?.1));
    }
    let data = item.call_method0("__bytes__").map_err(|_| {
        PyTypeError::new_err(format!(
            "packets=: a packet is bytes, (timestamp_ns, bytes) or a scapy packet, not {}",
            item.get_type().name().map_or("?".into(), |n| n.to_string())
        ))
    })?;
    let ts = item
        .getattr("time")
        .and_then(|t| t.extract::<f64>())
        .map_or(0, |s| (s * 1e9) as u64);
    Ok((ts, data.cast::<PyBytes>()?.as_bytes().to_vec()))
}

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
