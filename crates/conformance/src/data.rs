//! The `.data` test-file format: sections introduced by `-- name` lines.

/// Why a `.data` file (or a hex string in its format) cannot be read;
/// `line` counts from 1.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum DataError {
    #[error("line {line}: unknown section `-- {name}`")]
    UnknownSection { line: usize, name: String },
    #[error("line {line}: bad raw word `{word}`")]
    BadRaw { line: usize, word: String },
    #[error("bad result `{0}`")]
    BadResult(String),
    #[error("the test has no `-- asm` section")]
    NoAsm,
    /// A hex token with an odd number of digits.
    #[error("hex `{0}` has an odd number of digits")]
    OddDigits(String),
    #[error("`{0}` is not hex")]
    NotHex(String),
}

/// One conformance test.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestCase {
    /// Assembly text (`-- asm`).
    pub asm: String,
    /// Memory handed to the program in r1 (length in r2) (`-- mem`).
    pub mem: Vec<u8>,
    /// Expected r0 (`-- result`).
    pub result: Option<u64>,
    /// Expected error message (`-- error`).
    pub error: Option<String>,
    /// Expected encoding as 64-bit words (`-- raw`).
    pub raw: Option<Vec<u64>>,
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    None,
    Asm,
    Mem,
    Result,
    Error,
    Raw,
    Ignored,
}

impl TestCase {
    /// Parses a test file. Unknown sections are an error, as in the
    /// suite's own runner; `-- c` (the source the asm came from) and
    /// `-- no register offset` are informational and skipped.
    pub fn parse(text: &str) -> Result<TestCase, DataError> {
        let mut case = TestCase::default();
        let mut section = Section::None;
        let mut mem_text = String::new();
        let mut result_text = String::new();
        let mut raw = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Some(name) = line.strip_prefix("--") {
                section = match name.trim() {
                    "asm" => Section::Asm,
                    "mem" => Section::Mem,
                    "result" => Section::Result,
                    "error" => Section::Error,
                    "raw" => Section::Raw,
                    "c" | "no register offset" => Section::Ignored,
                    other => {
                        return Err(DataError::UnknownSection {
                            line: i + 1,
                            name: other.to_string(),
                        });
                    }
                };
                continue;
            }
            match section {
                Section::Asm => {
                    case.asm.push_str(line);
                    case.asm.push('\n');
                }
                Section::Mem => {
                    mem_text.push_str(line);
                    mem_text.push(' ');
                }
                Section::Result => {
                    result_text.push_str(line.split('#').next().unwrap_or("").trim())
                }
                Section::Error => {
                    let line = line.trim();
                    if !line.is_empty() {
                        case.error = Some(line.to_string());
                    }
                }
                Section::Raw => {
                    let word = line.split('#').next().unwrap_or("").trim();
                    if !word.is_empty() {
                        raw.push(parse_u64(word).ok_or_else(|| DataError::BadRaw {
                            line: i + 1,
                            word: word.to_string(),
                        })?);
                    }
                }
                Section::None | Section::Ignored => {}
            }
        }
        case.mem = parse_hex_bytes(&mem_text)?;
        if !result_text.is_empty() {
            case.result = Some(parse_u64(&result_text).ok_or(DataError::BadResult(result_text))?);
        }
        if !raw.is_empty() {
            case.raw = Some(raw);
        }
        if case.asm.trim().is_empty() {
            return Err(DataError::NoAsm);
        }
        Ok(case)
    }
}

fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Hex bytes as the suite writes them: separated by whitespace (`00 01`),
/// or run together (`0001`), each optionally prefixed by `0x`.
pub fn parse_hex_bytes(s: &str) -> Result<Vec<u8>, DataError> {
    let mut out = Vec::new();
    for token in s.split_whitespace() {
        let digits = token.strip_prefix("0x").unwrap_or(token);
        if digits.len() % 2 != 0 {
            return Err(DataError::OddDigits(token.to_string()));
        }
        for pair in digits.as_bytes().chunks(2) {
            let not_hex = || DataError::NotHex(token.to_string());
            let text = std::str::from_utf8(pair).map_err(|_| not_hex())?;
            out.push(u8::from_str_radix(text, 16).map_err(|_| not_hex())?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_line_and_the_token() {
        let e = TestCase::parse("-- asm\nexit\n-- bogus\n").unwrap_err();
        assert_eq!(
            e,
            DataError::UnknownSection {
                line: 3,
                name: "bogus".into()
            }
        );
        assert_eq!(e.to_string(), "line 3: unknown section `-- bogus`");
        let e = parse_hex_bytes("00 0x1g").unwrap_err();
        assert_eq!(e, DataError::NotHex("0x1g".into()));
        assert_eq!(e.to_string(), "`0x1g` is not hex");
        assert_eq!(
            parse_hex_bytes("abc").unwrap_err(),
            DataError::OddDigits("abc".into())
        );
        assert_eq!(TestCase::parse("-- mem\n00\n"), Err(DataError::NoAsm));
    }
}
