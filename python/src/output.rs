//! The packets a run produced, per route, kept in memory: [`sinks`] makes
//! a run's `output=` argument into the engine's in-memory sinks
//! ([`engine::Target::Memory`]), and [`Kept`] gives a route's packets back
//! as `bytes` or as scapy `Ether` packets.

use engine::{Output, Route, SinkSpec, Target};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList};

/// The routes, as the command line's `--out-ROUTE` options name them.
const ROUTES: [(&str, Route); 4] = [
    ("pass", Route::Pass),
    ("tx", Route::Tx),
    ("redirect", Route::Redirect),
    ("drop", Route::Drop),
];

/// The route a name gives: `pass`, `tx`, `redirect`, `drop`, in any case
/// (`"TX"` as the verdict names it; `SHOT`, tc's drop, is `drop`).
fn route(name: &str) -> PyResult<(&'static str, Route)> {
    let lower = name.to_ascii_lowercase();
    let lower = if lower == "shot" {
        "drop".into()
    } else {
        lower
    };
    ROUTES
        .iter()
        .find(|(n, _)| *n == lower)
        .copied()
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "route {name:?}: \"pass\", \"tx\", \"redirect\" or \"drop\""
            ))
        })
}

/// `output=`: `None`/`False` (nothing kept), `True` (every route), a
/// route's name or a list of them.
pub(crate) fn sinks(output: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<SinkSpec>> {
    let Some(output) = output else {
        return Ok(Vec::new());
    };
    let names: Vec<String> = if let Ok(b) = output.cast::<PyBool>() {
        match b.is_true() {
            true => ROUTES.iter().map(|(n, _)| n.to_string()).collect(),
            false => Vec::new(),
        }
    } else if let Ok(one) = output.extract::<String>() {
        vec![one]
    } else {
        output.extract::<Vec<String>>().map_err(|_| {
            PyTypeError::new_err("output=: True, a route (\"tx\") or a list of routes")
        })?
    };
    names
        .iter()
        .map(|n| {
            Ok(SinkSpec {
                route: route(n)?.1,
                to: Target::Memory,
            })
        })
        .collect()
}

/// The packets a run kept, per route.
pub(crate) struct Kept {
    output: Output,
    /// The routes asked for (a route that took no packet has none here).
    asked: Vec<&'static str>,
}

impl Kept {
    pub(crate) fn new(output: Output, sinks: &[SinkSpec]) -> Kept {
        let asked = sinks
            .iter()
            .filter(|s| s.to == Target::Memory)
            .map(|s| engine::route_name(s.route))
            .collect();
        Kept { output, asked }
    }

    /// The packets of route `name`, in the run's order: `bytes`, or with
    /// `scapy` scapy `Ether` packets whose `time` is the packet's.
    pub(crate) fn packets<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        scapy: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let (route, _) = route(name)?;
        if !self.asked.contains(&route) {
            return Err(PyValueError::new_err(format!(
                "the run kept no {route} packets: run(..., output=\"{route}\") (or output=True) keeps them"
            )));
        }
        let packets = self.output.get(route).map_or(&[][..], |v| v.as_slice());
        let ether = match scapy {
            true => Some(py.import("scapy.layers.l2")?.getattr("Ether")?),
            false => None,
        };
        let list = PyList::empty(py);
        for (ts, data) in packets {
            let bytes = PyBytes::new(py, data);
            match &ether {
                Some(ether) => {
                    let p = ether.call1((bytes,))?;
                    p.setattr("time", *ts as f64 / 1e9)?;
                    list.append(p)?;
                }
                None => list.append(bytes)?,
            }
        }
        Ok(list)
    }
}
