//! The dumps after a line: `-x` (hex), `-X` (hex and ASCII), `-A`
//! (ASCII), of the bytes after the link-level header, as tcpdump's
//! `hex_print`, `hex_and_ascii_print` and `ascii_print` lay them out.

use crate::Hex;
use std::fmt::Write;

const SHORTS_PER_LINE: usize = 8;
const HEX_WIDTH: usize = 5 * SHORTS_PER_LINE;

fn graph(b: u8) -> bool {
    b > 0x20 && b <= 0x7e
}

pub(crate) fn dump(out: &mut String, form: Hex, bytes: &[u8]) {
    match form {
        Hex::None => {}
        Hex::X => hex_only(out, bytes),
        Hex::XAscii => hex_ascii(out, bytes),
        Hex::Ascii => ascii(out, bytes),
    }
}

fn hex_only(out: &mut String, bytes: &[u8]) {
    for (i, chunk) in bytes.chunks(2).enumerate() {
        if i % SHORTS_PER_LINE == 0 {
            let _ = write!(out, "\n\t0x{:04x}: ", i * 2);
        }
        out.push(' ');
        for b in chunk {
            let _ = write!(out, "{b:02x}");
        }
    }
}

fn hex_ascii(out: &mut String, bytes: &[u8]) {
    for (line, chunk) in bytes.chunks(2 * SHORTS_PER_LINE).enumerate() {
        let mut hexpart = String::with_capacity(HEX_WIDTH);
        let mut text = String::with_capacity(16);
        for pair in chunk.chunks(2) {
            hexpart.push(' ');
            for &b in pair {
                let _ = write!(hexpart, "{b:02x}");
                text.push(if graph(b) { b as char } else { '.' });
            }
        }
        let _ = write!(
            out,
            "\n\t0x{:04x}: {hexpart:<HEX_WIDTH$}  {text}",
            line * 16
        );
    }
}

fn ascii(out: &mut String, bytes: &[u8]) {
    out.push('\n');
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\r' {
            // tcpdump drops a CR that ends a line.
            if bytes.get(i + 1) != Some(&b'\n') {
                out.push('.');
            }
        } else if graph(b) || b == b'\t' || b == b' ' || b == b'\n' {
            out.push(b as char);
        } else {
            out.push('.');
        }
    }
}
