//! sluice's records as Arrow tables, in one place for every front end (the
//! command line's `--out-table`, the Python package's tables): each
//! engine record kind becomes an Arrow [`RecordBatch`], and [`write`]
//! writes one as Parquet, Arrow IPC or CSV, as the file's name says
//! ([`Format`]).
//!
//! - [`packets`]: a run's packets (the engine's [`engine::PacketTable`]),
//!   its columns moved, not copied;
//! - [`flows`]: ended flows, columns named as IPFIX's information elements;
//! - [`rtt`]: RTT samples;
//! - [`samples`]: trajectory sampling's records;
//! - [`profile`]: a profile's packets and their costs.
//!
//! Each module's `schema()` lists its columns (docs/tables.md too).
//! Errors are [`TableError`]s.
//!
//! ```
//! let batch = tables::rtt(&[]).unwrap();
//! assert_eq!(batch.num_rows(), 0);
//! assert_eq!(batch.schema().field(5).name(), "rtt_ns");
//! let dir = std::env::temp_dir().join(format!("tables-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! assert_eq!(tables::write(&dir.join("rtt.csv"), &batch).unwrap(), tables::Format::Csv);
//! assert!(tables::write(&dir.join("rtt.txt"), &batch).is_err());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

mod error;
pub mod flows;
pub mod packets;
pub mod profile;
pub mod rtt;
pub mod samples;
mod write;

pub use arrow_array::RecordBatch;
pub use error::TableError;
pub use flows::flows;
pub use packets::packets;
pub use profile::profile;
pub use rtt::rtt;
pub use samples::samples;
pub use write::{Format, write};
