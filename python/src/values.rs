//! Map keys and values between Python and the engine's [`Value`]: ints,
//! bytes, str, dicts (struct members by name), tuples (arrays),
//! `ipaddress` addresses and networks (LPM trie keys).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use engine::{MapValue, Value};
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyByteArray, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};

use crate::errors::MapError;

/// `value` as a Python object: an int, bytes, a str (enum constants, MAC
/// addresses), an `ipaddress` address or network, a dict, a tuple.
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Int(n) => n.into_pyobject(py)?.into_any(),
        Value::Text(t) => PyString::new(py, t).into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        Value::Ip(ip) => py
            .import("ipaddress")?
            .call_method1("ip_address", (ip.to_string(),))?,
        Value::Prefix(ip, len) => py.import("ipaddress")?.call_method(
            "ip_network",
            (format!("{ip}/{len}"),),
            Some(&[("strict", false)].into_py_dict(py)?),
        )?,
        Value::Mac(m) => {
            let parts: Vec<String> = m.iter().map(|b| format!("{b:02x}")).collect();
            PyString::new(py, &parts.join(":")).into_any()
        }
        Value::Struct(members) => {
            let d = PyDict::new(py);
            for (name, v) in members {
                d.set_item(name, to_py(py, v)?)?;
            }
            d.into_any()
        }
        Value::Array(items) => {
            let items: PyResult<Vec<Bound<'py, PyAny>>> =
                items.iter().map(|v| to_py(py, v)).collect();
            PyTuple::new(py, items?)?.into_any()
        }
    })
}

/// A map's value as Python: a per-CPU map's a list, one value per CPU.
pub(crate) fn map_value_to_py<'py>(
    py: Python<'py>,
    value: &MapValue,
) -> PyResult<Bound<'py, PyAny>> {
    match value {
        MapValue::Shared(v) => to_py(py, v),
        MapValue::PerCpu(vs) => {
            let items: PyResult<Vec<Bound<'py, PyAny>>> = vs.iter().map(|v| to_py(py, v)).collect();
            Ok(PyList::new(py, items?)?.into_any())
        }
    }
}

/// A Python key or value as the engine takes it.
pub(crate) fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Value::Bytes(b.as_bytes().to_vec()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Value::Bytes(b.to_vec()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Text(s.extract::<String>()?));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut members = Vec::new();
        for (k, v) in d.iter() {
            let name: String = k.extract().map_err(|_| {
                MapError::new_err(format!(
                    "a struct's members are named by str, not {}",
                    type_name(&k)
                ))
            })?;
            members.push((name, from_py(&v)?));
        }
        return Ok(Value::Struct(members));
    }
    if obj.cast::<PyTuple>().is_ok() || obj.cast::<PyList>().is_ok() {
        let items: PyResult<Vec<Value>> = obj.try_iter()?.map(|i| from_py(&i?)).collect();
        return Ok(Value::Array(items?));
    }
    let ipaddress = obj.py().import("ipaddress")?;
    let is = |class: &str| -> PyResult<bool> { obj.is_instance(&ipaddress.getattr(class)?) };
    if is("IPv4Network")? || is("IPv6Network")? {
        let ip = ip_of(&obj.getattr("network_address")?)?;
        let len: u32 = obj.getattr("prefixlen")?.extract()?;
        return Ok(Value::Prefix(ip, len));
    }
    if is("IPv4Address")? || is("IPv6Address")? {
        return Ok(Value::Ip(ip_of(obj)?));
    }
    if let Ok(n) = obj.extract::<i128>() {
        return Ok(Value::Int(n));
    }
    if obj.cast::<PyInt>().is_ok() {
        return Err(MapError::new_err(format!(
            "{} does not fit 128 bits",
            obj.str()?
        )));
    }
    Err(MapError::new_err(format!(
        "a key or value is an int, bytes, str, dict, tuple or ipaddress object, not {}",
        type_name(obj)
    )))
}

/// A value for a map: a per-CPU map takes a list (one value per CPU) or
/// one value for every CPU.
pub(crate) fn map_value_from_py(obj: &Bound<'_, PyAny>, per_cpu: bool) -> PyResult<MapValue> {
    if per_cpu && let Ok(list) = obj.cast::<PyList>() {
        let items: PyResult<Vec<Value>> = list.iter().map(|i| from_py(&i)).collect();
        return Ok(MapValue::PerCpu(items?));
    }
    Ok(MapValue::Shared(from_py(obj)?))
}

fn ip_of(addr: &Bound<'_, PyAny>) -> PyResult<IpAddr> {
    let packed = addr.getattr("packed")?;
    let b = packed.cast::<PyBytes>()?.as_bytes();
    if let Ok(a) = <[u8; 4]>::try_from(b) {
        return Ok(IpAddr::V4(Ipv4Addr::from(a)));
    }
    let a = <[u8; 16]>::try_from(b)
        .map_err(|_| MapError::new_err("an address of neither 4 nor 16 bytes"))?;
    Ok(IpAddr::V6(Ipv6Addr::from(a)))
}

pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string())
}

/// A dict key for `obj`: dicts become tuples of their values, lists tuples.
pub(crate) fn hashable<'py>(
    py: Python<'py>,
    obj: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(d) = obj.cast::<PyDict>() {
        let items: PyResult<Vec<Bound<'py, PyAny>>> =
            d.values().iter().map(|v| hashable(py, v)).collect();
        return Ok(PyTuple::new(py, items?)?.into_any());
    }
    Ok(obj)
}
