//! Running tcpdump (testkit's driver) for the comparisons: its output cut
//! into one record per packet, and the flag sets with the options that
//! mirror them.

use dissect::{Hex, PrintOptions, TimeFormat};
use std::path::Path;
use testkit::tool::{TCPDUMP, output};

/// Whether `line` begins with the timestamp `flags` ask for (`-t`: none,
/// so any line not indented as a continuation).
pub fn starts_record(line: &str, flags: &[&str]) -> bool {
    let b = line.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let hms = |o: usize| {
        digits(o..o + 2)
            && b.get(o + 2) == Some(&b':')
            && digits(o + 3..o + 5)
            && b.get(o + 5) == Some(&b':')
            && digits(o + 6..o + 8)
            && b.get(o + 8) == Some(&b'.')
            && digits(o + 9..o + 15)
    };
    if flags.contains(&"-t") {
        !(line.starts_with('\t') || line.starts_with("    "))
    } else if flags.contains(&"-tt") {
        let dot = line.find('.').unwrap_or(0);
        dot > 0 && digits(0..dot) && digits(dot + 1..dot + 7)
    } else if flags.contains(&"-ttt") {
        matches!(b.first(), Some(b' ' | b'-')) && hms(1)
    } else {
        hms(0)
    }
}

/// tcpdump's output for a capture, one record (its line and the lines
/// that continue it) per packet.
pub fn tcpdump(file: &Path, flags: &[&str]) -> Vec<String> {
    let out = output(
        TCPDUMP
            .command()
            .env("TZ", "UTC")
            .arg("-n")
            .args(flags)
            .arg("-r")
            .arg(file),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut records: Vec<String> = Vec::new();
    for line in text.lines() {
        match records.last_mut() {
            Some(last) if !starts_record(line, flags) => {
                last.push('\n');
                last.push_str(line);
            }
            _ => records.push(line.to_string()),
        }
    }
    records
}

/// Every flag set the tests run, with the options that mirror it.
pub fn flag_sets() -> Vec<(&'static [&'static str], PrintOptions)> {
    let o = PrintOptions::default();
    vec![
        (&[], o),
        (&["-e"], PrintOptions { link: true, ..o }),
        (
            &["-t"],
            PrintOptions {
                time: TimeFormat::None,
                ..o
            },
        ),
        (
            &["-tt"],
            PrintOptions {
                time: TimeFormat::Epoch,
                ..o
            },
        ),
        (
            &["-ttt"],
            PrintOptions {
                time: TimeFormat::Delta,
                ..o
            },
        ),
        (&["-v"], PrintOptions { verbose: 1, ..o }),
        (&["-x"], PrintOptions { hex: Hex::X, ..o }),
        (
            &["-X"],
            PrintOptions {
                hex: Hex::XAscii,
                ..o
            },
        ),
        (
            &["-A"],
            PrintOptions {
                hex: Hex::Ascii,
                ..o
            },
        ),
    ]
}
