//! `sluice._sluice`: the native module of the `sluice` Python package.
//!
//! It binds the `engine` crate (and nothing below it) for Python: an
//! [`object::Object`] (an ELF file or its bytes) gives
//! [`program::Program`]s, whose `run` replays packets (a capture,
//! packets in memory, generated traffic) with the GIL released and gives a
//! [`result::RunResult`]: the report of `sluice run --json` and, per
//! packet, an Arrow table handed to pyarrow through the Arrow C stream
//! interface ([`table`]), and with `coverage=True` the source lines,
//! branches and functions run ([`coverage::Coverage`]). A program holds
//! its maps between runs ([`maps`], keys and values converted in
//! [`values`], tables in [`map_table`]); [`verify`] checks it as `sluice
//! verify` does. A [`filter::Filter`] is a tcpdump expression (its
//! program, its `-d` text, packets filtered as `sluice filter`); a
//! [`tc::Tc`] a tc configuration packets run through (`sluice run --tc`).
//! Every run takes its packets from [`source`] and stops on Ctrl-C
//! ([`interrupt`]). Errors are the exceptions of [`errors`], with the
//! command line's messages. `profile` gives a [`profile::Profile`] (the
//! cost model, a table per packet); [`monitor`]'s `flows`, `rtt` and
//! `sample` run `sluice monitor`'s applications, their records a table.
//! [`shard`] plans a capture list as shards and checks their proof;
//! [`shard_result`] runs a program over one and merges the runs.

use pyo3::prelude::*;

mod cluster_flows;
mod coverage;
mod errors;
mod filter;
mod filter_result;
mod interrupt;
mod map_table;
mod maps;
mod monitor;
mod object;
mod output;
mod partition;
mod profile;
mod program;
mod result;
mod run_args;
mod shard;
mod shard_result;
mod source;
mod table;
mod tc;
mod tc_table;
mod values;
mod verify;

/// The module: its classes and exceptions.
#[pymodule]
fn _sluice(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<object::Object>()?;
    m.add_class::<program::Program>()?;
    m.add_class::<result::RunResult>()?;
    m.add_class::<table::PacketStream>()?;
    // Maps and verify().
    m.add_class::<maps::Maps>()?;
    m.add_class::<maps::Map>()?;
    m.add_class::<maps::Names>()?;
    m.add_class::<verify::VerifyResult>()?;
    m.add_class::<coverage::Coverage>()?;
    m.add_class::<filter::Filter>()?;
    m.add_class::<filter_result::FilterResult>()?;
    m.add_class::<tc::Tc>()?;
    m.add_class::<tc::TcResult>()?;
    m.add_class::<monitor::MonitorResult>()?;
    m.add_class::<profile::Profile>()?;
    m.add_class::<partition::Partition>()?;
    m.add_class::<partition::BucketResult>()?;
    m.add_function(wrap_pyfunction!(monitor::flows, m)?)?;
    m.add_function(wrap_pyfunction!(monitor::rtt, m)?)?;
    m.add_function(wrap_pyfunction!(monitor::sample, m)?)?;
    // Flows and filters over shards (docs/shards.md).
    m.add_class::<cluster_flows::FlowsShard>()?;
    m.add_class::<cluster_flows::FilterShard>()?;
    m.add_function(wrap_pyfunction!(cluster_flows::flows_shard, m)?)?;
    m.add_function(wrap_pyfunction!(cluster_flows::merge_flows, m)?)?;
    m.add_function(wrap_pyfunction!(cluster_flows::flows_shard_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(cluster_flows::filter_shard_from_bytes, m)?)?;
    // Shards of a capture list, runs over them, their merge (docs/shards.md).
    m.add_class::<shard::Shard>()?;
    m.add_class::<shard::Redo>()?;
    m.add_class::<shard_result::ShardResult>()?;
    m.add_function(wrap_pyfunction!(shard::plan, m)?)?;
    m.add_function(wrap_pyfunction!(shard::check, m)?)?;
    m.add_function(wrap_pyfunction!(shard::_shard_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(shard::_redo_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(shard_result::_shard_result_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(program::_program_from_bytes, m)?)?;
    errors::register(m)?;
    Ok(())
}
