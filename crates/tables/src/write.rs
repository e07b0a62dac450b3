//! Writing a table to a file in the format its name says ([`Format::of`]):
//! Parquet (`.parquet`, Snappy-compressed), Arrow IPC (`.arrow`,
//! `.feather`, `.ipc`: Feather V2) or CSV (`.csv`, with a header line).
//! pandas, polars and DuckDB read all three.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use std::sync::Arc;

use arrow_array::{RecordBatch, make_array};
use arrow_schema::{DataType, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::TableError;

/// A table file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Parquet,
    /// The Arrow IPC file format (Feather V2).
    Ipc,
    Csv,
}

impl Format {
    /// The format `path`'s extension names (case aside).
    pub fn of(path: &Path) -> Result<Format, TableError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("parquet") => Ok(Format::Parquet),
            Some("arrow" | "feather" | "ipc") => Ok(Format::Ipc),
            Some("csv") => Ok(Format::Csv),
            _ => Err(TableError::Format {
                path: path.to_path_buf(),
            }),
        }
    }
}

/// Writes `batch` to `path` (created, or truncated) in the format its
/// name says; returns the format.
pub fn write(path: &Path, batch: &RecordBatch) -> Result<Format, TableError> {
    let format = Format::of(path)?;
    let io = |source| TableError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut out = BufWriter::new(File::create(path).map_err(io)?);
    let written = match format {
        Format::Parquet => parquet(&mut out, batch),
        Format::Ipc => ipc(&mut out, batch),
        Format::Csv => csv(&mut out, batch),
    };
    written.map_err(|e| TableError::Write {
        path: path.to_path_buf(),
        source: Box::new(e),
    })?;
    out.flush().map_err(io)?;
    Ok(format)
}

fn parquet(out: &mut (impl Write + Send), batch: &RecordBatch) -> Result<(), TableError> {
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut w = ArrowWriter::try_new(out, batch.schema(), Some(props))?;
    w.write(batch)?;
    w.close()?;
    Ok(())
}

fn ipc(out: &mut impl Write, batch: &RecordBatch) -> Result<(), TableError> {
    let mut w = arrow_ipc::writer::FileWriter::try_new(out, &batch.schema())?;
    w.write(batch)?;
    w.finish()?;
    Ok(())
}

fn csv(out: &mut impl Write, batch: &RecordBatch) -> Result<(), TableError> {
    let mut w = arrow_csv::WriterBuilder::new().with_header(true).build(out);
    w.write(&utc_as_offset(batch)?)?;
    Ok(())
}

/// `batch` with its UTC timestamps' zone written `+00:00` (the same
/// instants, the same buffers): the CSV writer formats offsets, not zone
/// names, without a time zone database.
fn utc_as_offset(batch: &RecordBatch) -> Result<RecordBatch, TableError> {
    let offset = |t: &DataType| match t {
        DataType::Timestamp(unit, Some(tz)) if tz.as_ref() == "UTC" => {
            Some(DataType::Timestamp(*unit, Some("+00:00".into())))
        }
        _ => None,
    };
    let schema = batch.schema();
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        match offset(field.data_type()) {
            Some(t) => {
                let data = column
                    .to_data()
                    .into_builder()
                    .data_type(t.clone())
                    .build()?;
                columns.push(make_array(data));
                fields.push(field.as_ref().clone().with_data_type(t));
            }
            None => {
                columns.push(column.clone());
                fields.push(field.as_ref().clone());
            }
        }
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}
