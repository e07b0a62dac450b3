//! The BPF ISA conformance suite (github.com/Alan-Jowett/bpf_conformance):
//! its `.data` test files, its plugin protocol, and a runner that feeds every
//! test through the same path the plugin uses.

mod data;
mod plugin;
mod suite;

pub use data::{DataError, TestCase, parse_hex_bytes};
pub use plugin::{Engine, PluginError, PluginRequest, run_plugin};
pub use suite::{SuiteReport, TestReport, TestResult, run_suite};
