//! `Program.maps` ([`Maps`]) and one map ([`Map`]): a dict-like view of a
//! program's map, read and written as user space does with `bpf()`,
//! always on the program's current maps (after `reset()`, the fresh ones).
//! Keys and values convert through [`crate::values`]; `to_arrow` builds
//! its table in [`crate::map_table`].

use engine::{HookMap, MapInfo};
use pyo3::exceptions::{PyKeyError, PyStopIteration};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::errors::map_error;
use crate::program::Program;
use crate::values::{from_py, hashable, map_value_from_py, map_value_to_py, to_py};

/// A program's maps by name (:attr:`Program.maps`): ``maps["name"]`` is a
/// :class:`Map`; iterating gives the names, in the object's order.
#[pyclass(module = "sluice", frozen)]
pub struct Maps {
    program: Py<Program>,
}

impl Maps {
    pub(crate) fn new(program: Py<Program>) -> Maps {
        Maps { program }
    }
}

#[pymethods]
impl Maps {
    /// The map ``name``; raises ``sluice.MapError`` (naming the maps there
    /// are) when there is none.
    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Map> {
        self.program
            .get()
            .hook_maps()
            .get(name)
            .map_err(map_error)?;
        Ok(Map {
            program: self.program.clone_ref(py),
            name: name.to_string(),
        })
    }

    fn __contains__(&self, name: &str) -> bool {
        self.program.get().hook_maps().get(name).is_ok()
    }

    fn __len__(&self) -> usize {
        self.program.get().hook_maps().names().len()
    }

    fn __iter__(&self) -> Names {
        Names {
            names: self.keys(),
            at: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The maps' names, in the object's order.
    fn keys(&self) -> Vec<String> {
        self.program.get().hook_maps().names()
    }

    fn __repr__(&self) -> String {
        format!("sluice.Maps({:?})", self.keys())
    }
}

/// An iterator over names or keys, taken when iteration starts.
#[pyclass(module = "sluice", frozen)]
pub struct Names {
    names: Vec<String>,
    at: std::sync::atomic::AtomicUsize,
}

#[pymethods]
impl Names {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self) -> PyResult<String> {
        let i = self.at.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.names
            .get(i)
            .cloned()
            .ok_or_else(|| PyStopIteration::new_err(()))
    }
}

/// One map of a program (``prog.maps["name"]``), like a dict.
///
/// Keys and values: an ``int`` (little-endian, at the key's size), ``bytes``
/// of the exact size, a ``dict`` by the BTF member names (nested structs as
/// nested dicts; members not given are zeros), a ``tuple`` for arrays, a
/// ``str`` as ``sluice run --map-update`` takes it (a number, an IP address,
/// ``hex:BYTES``), an enum constant's name; addresses as ``ipaddress``
/// objects or strings; LPM trie keys as IP prefixes
/// (``ipaddress.ip_network("10.0.0.0/8")`` or ``"10.0.0.0/8"``). Reads
/// decode through BTF as the report's map dumps do (without BTF: bytes).
/// Per-CPU maps: a value is a list, one per CPU; writing one value
/// writes it on every CPU.
///
/// ``m[key]`` (``KeyError`` when absent; LPM tries give the longest
/// match), ``m[key] = value``, ``del m[key]`` (``KeyError`` when absent),
/// ``key in m``, ``len(m)`` (entries in use; arrays: all), iteration over
/// keys, :meth:`items`, :meth:`to_dict`, :meth:`to_arrow`. A key or value
/// that does not fit raises ``sluice.MapError``.
#[pyclass(module = "sluice", frozen)]
pub struct Map {
    program: Py<Program>,
    name: String,
}

impl Map {
    /// The map as the program has it now.
    fn handle(&self) -> PyResult<HookMap> {
        self.program
            .get()
            .hook_maps()
            .get(&self.name)
            .map_err(map_error)
    }
}

/// `info` as a dict.
pub(crate) fn info_dict<'py>(py: Python<'py>, i: &MapInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &i.name)?;
    d.set_item("type", &i.map_type)?;
    d.set_item("key_size", i.key_size)?;
    d.set_item("value_size", i.value_size)?;
    d.set_item("max_entries", i.max_entries)?;
    d.set_item("flags", i.flags)?;
    d.set_item("cpus", i.cpus)?;
    Ok(d)
}

#[pymethods]
impl Map {
    /// The map's name.
    #[getter]
    fn name(&self) -> String {
        self.name.clone()
    }

    /// What the map is, sizes as loaded: ``{"name", "type" (as bpftool
    /// names it), "key_size", "value_size", "max_entries", "flags",
    /// "cpus"}`` (``cpus``: the values per key of a per-CPU map, else 1).
    #[getter]
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        info_dict(py, &self.handle()?.info())
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let k = from_py(key)?;
        let map = self.handle()?;
        match py.detach(|| map.lookup(&k)).map_err(map_error)? {
            Some(v) => map_value_to_py(py, &v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// The value at ``key``, or ``default`` when there is none.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let k = from_py(key)?;
        let map = self.handle()?;
        match py.detach(|| map.lookup(&k)).map_err(map_error)? {
            Some(v) => map_value_to_py(py, &v),
            None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
        }
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let map = self.handle()?;
        let k = from_py(key)?;
        let v = map_value_from_py(value, map.per_cpu().is_some())?;
        self.program.get().touched();
        py.detach(|| map.update(&k, &v)).map_err(map_error)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let map = self.handle()?;
        let k = from_py(key)?;
        self.program.get().touched();
        if py.detach(|| map.delete(&k)).map_err(map_error)? {
            Ok(())
        } else {
            Err(PyKeyError::new_err(key.clone().unbind()))
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = from_py(key)?;
        let map = self.handle()?;
        Ok(py.detach(|| map.lookup(&k)).map_err(map_error)?.is_some())
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.handle()?.len())
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.keys(py)?.into_any().try_iter().map(Bound::into_any)
    }

    /// The keys, in the map's order (``bpf_map_get_next_key``'s), as a list.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let map = self.handle()?;
        let keys = py.detach(|| map.keys());
        let items: PyResult<Vec<Bound<'py, PyAny>>> = keys.iter().map(|k| to_py(py, k)).collect();
        PyList::new(py, items?)
    }

    /// The values, in the keys' order, as a list.
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let map = self.handle()?;
        let entries = py.detach(|| map.entries());
        let items: PyResult<Vec<Bound<'py, PyAny>>> = entries
            .iter()
            .map(|(_, v)| map_value_to_py(py, v))
            .collect();
        PyList::new(py, items?)
    }

    /// ``(key, value)`` pairs, in the map's order, as a list.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let map = self.handle()?;
        let entries = py.detach(|| map.entries());
        let items: PyResult<Vec<Bound<'py, PyAny>>> = entries
            .iter()
            .map(
                |(k, v)| Ok(PyTuple::new(py, [to_py(py, k)?, map_value_to_py(py, v)?])?.into_any()),
            )
            .collect();
        PyList::new(py, items?)
    }

    /// The whole map as a dict (keys that are dicts, as struct keys
    /// decode, are made tuples of their members' values, to be hashable).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let map = self.handle()?;
        let entries = py.detach(|| map.entries());
        let d = PyDict::new(py);
        for (k, v) in &entries {
            d.set_item(hashable(py, to_py(py, k)?)?, map_value_to_py(py, v)?)?;
        }
        Ok(d)
    }

    /// The map as a ``pyarrow.Table``: key and value columns decoded
    /// through BTF (a struct's members as columns, nested structs as
    /// struct columns, arrays as fixed-size lists, addresses, enum
    /// constants and MAC addresses as strings, what BTF does not describe
    /// as fixed-size binary); a column named as both a key and a value
    /// member is prefixed ``key.``/``value.``. A per-CPU map has one row
    /// per key and CPU, with a ``cpu`` column.
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let map = self.handle()?;
        let batch = py
            .detach(|| crate::map_table::record_batch(&map))
            .map_err(|e| crate::errors::MapError::new_err(e.to_string()))?;
        let stream = crate::table::PacketStream::new(batch);
        py.import("pyarrow")?.call_method1("table", (stream,))
    }

    fn __repr__(&self) -> PyResult<String> {
        let i = self.handle()?.info();
        Ok(format!(
            "sluice.Map({:?}, type={:?}, key_size={}, value_size={}, max_entries={})",
            i.name, i.map_type, i.key_size, i.value_size, i.max_entries
        ))
    }
}
