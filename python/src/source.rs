//! Where a run's packets come from, for every `run` of the package
//! (`Program.run`, `Filter.run`, `Tc.run`): [`source`] makes exactly one
//! of `pcap=` (a path, a binary file object, or a whole capture's bytes),
//! `packets=` (frames in memory) and `gen=` (generator specs) into the
//! engine's [`SourceSpec`].

use engine::{Origin, SourceSpec};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString, PyTuple};

/// The source of exactly one of `pcap`, `packets`, `gen`.
pub(crate) fn source(
    pcap: Option<&Bound<'_, PyAny>>,
    packets: Option<&Bound<'_, PyAny>>,
    gen_: Option<&Bound<'_, PyAny>>,
) -> PyResult<SourceSpec> {
    match (pcap, packets, gen_) {
        (Some(pcap), None, None) => capture(pcap),
        (None, Some(packets), None) => Ok(SourceSpec::new(Origin::Frames {
            frames: frames(packets)?,
        })),
        (None, None, Some(specs)) => Ok(SourceSpec::generated(gen_specs(specs)?)),
        _ => Err(PyTypeError::new_err(
            "run() takes exactly one of pcap=, packets=, gen=",
        )),
    }
}

/// `pcap=`: a path (`str`, `os.PathLike`), a whole capture's bytes
/// (`bytes`, `bytearray`), or a binary file object (anything with
/// `.read()`: `io.BytesIO`, an open file), read whole; a file object's
/// `name` (an open file's path) names it in reports and errors.
fn capture(pcap: &Bound<'_, PyAny>) -> PyResult<SourceSpec> {
    if let Some(bytes) = as_bytes(pcap) {
        return Ok(SourceSpec::capture_bytes("<bytes>", bytes));
    }
    if pcap.hasattr("read")? && !pcap.is_instance_of::<PyString>() {
        let data = pcap.call_method0("read")?;
        let bytes = as_bytes(&data).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "pcap=: a file object's read() gave {}, not bytes (open it in binary mode: \"rb\")",
                type_name(&data)
            ))
        })?;
        let name = pcap
            .getattr("name")
            .ok()
            .and_then(|n| n.extract::<String>().ok())
            .unwrap_or_else(|| "<file object>".to_string());
        return Ok(SourceSpec::capture_bytes(name, bytes));
    }
    let path = pcap.extract::<std::path::PathBuf>().map_err(|_| {
        PyTypeError::new_err(format!(
            "pcap=: a path, a binary file object or a capture's bytes, not {}",
            type_name(pcap)
        ))
    })?;
    Ok(SourceSpec::capture(path))
}

fn as_bytes(o: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    if let Ok(b) = o.cast::<PyBytes>() {
        return Some(b.as_bytes().to_vec());
    }
    o.cast::<PyByteArray>().ok().map(|b| b.to_vec())
}

fn type_name(o: &Bound<'_, PyAny>) -> String {
    o.get_type().name().map_or("?".into(), |n| n.to_string())
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
pub(crate) fn frames(packets: &Bound<'_, PyAny>) -> PyResult<Vec<(u64, Vec<u8>)>> {
    let mut out = Vec::new();
    for item in packets.try_iter()? {
        out.push(frame(&item?)?);
    }
    Ok(out)
}

/// One packet of `packets=` (see [`frames`]).
pub(crate) fn frame(item: &Bound<'_, PyAny>) -> PyResult<(u64, Vec<u8>)> {
    if let Some(b) = as_bytes(item) {
        return Ok((0, b));
    }
    if let Ok(pair) = item.cast::<PyTuple>() {
        let (ts, data): (u64, Bound<'_, PyAny>) = pair.extract()?;
        return Ok((ts, frame(&data)?.1));
    }
    let data = item.call_method0("__bytes__").map_err(|_| {
        PyTypeError::new_err(format!(
            "packets=: a packet is bytes, (timestamp_ns, bytes) or a scapy packet, not {}",
            type_name(item)
        ))
    })?;
    let ts = item
        .getattr("time")
        .and_then(|t| t.extract::<f64>())
        .map_or(0, |s| (s * 1e9) as u64);
    Ok((ts, data.cast::<PyBytes>()?.as_bytes().to_vec()))
}
