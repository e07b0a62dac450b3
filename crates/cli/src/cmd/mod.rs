pub mod asm;
pub mod conformance;
pub mod demo;
pub mod diff;
pub mod disasm;
pub mod exec;
pub mod run;
