//! The lcov tracefile (`geninfo(1)`'s format, which `genhtml` reads): per
//! source file `SF:`, `FN:`/`FNDA:`/`FNF:`/`FNH:`, `BRDA:`/`BRF:`/`BRH:`,
//! `DA:`/`LF:`/`LH:` and `end_of_record`, after a `TN:` test name.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::Coverage;

/// Why a tracefile was not written.
#[derive(Debug, thiserror::Error)]
pub enum CoverageError {
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Coverage {
    /// The lcov tracefile of this coverage, `test_name` its `TN:` (lcov
    /// allows letters, digits and `_`; others become `_`).
    pub fn lcov(&self, test_name: &str) -> String {
        let tn: String = test_name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let mut out = String::new();
        for (name, file) in self.files() {
            // Writing to a String cannot fail.
            let _ = writeln!(out, "TN:{tn}\nSF:{name}");
            let mut functions: Vec<_> = file.functions.iter().collect();
            functions.sort_by_key(|(n, f)| (f.line, n.as_str()));
            for (n, f) in &functions {
                let _ = writeln!(out, "FN:{},{n}", f.line);
            }
            for (n, f) in &functions {
                let _ = writeln!(out, "FNDA:{},{n}", f.calls);
            }
            let hit = functions.iter().filter(|(_, f)| f.calls > 0).count();
            let _ = writeln!(out, "FNF:{}\nFNH:{hit}", functions.len());
            let (mut found, mut hit) = (0, 0);
            for (line, jumps) in &file.branches {
                for (block, j) in jumps.iter().enumerate() {
                    for branch in 0..2 {
                        found += 1;
                        match j.ways() {
                            Some(w) => {
                                hit += usize::from(w[branch] > 0);
                                let _ = writeln!(out, "BRDA:{line},{block},{branch},{}", w[branch]);
                            }
                            None => {
                                let _ = writeln!(out, "BRDA:{line},{block},{branch},-");
                            }
                        }
                    }
                }
            }
            let _ = writeln!(out, "BRF:{found}\nBRH:{hit}");
            for (line, n) in &file.lines {
                let _ = writeln!(out, "DA:{line},{n}");
            }
            let hit = file.lines.values().filter(|n| **n > 0).count();
            let _ = writeln!(out, "LF:{}\nLH:{hit}\nend_of_record", file.lines.len());
        }
        out
    }

    /// Writes [`Coverage::lcov`] to `path`.
    pub fn write(&self, path: &Path, test_name: &str) -> Result<(), CoverageError> {
        std::fs::write(path, self.lcov(test_name)).map_err(|source| CoverageError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Coverage;

    /// A program of `text`, its slots at lines `lines` of `file`, and
    /// functions at the slots given.
    pub(crate) fn program(
        text: &str,
        file: &str,
        lines: &[(usize, u32)],
        functions: &[(&str, usize)],
    ) -> obj::Program {
        obj::Program {
            name: functions[0].0.into(),
            section: "xdp".into(),
            kind: obj::ProgramKind::SocketFilter,
            insns: isa::assemble(text).unwrap(),
            functions: functions.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
            lines: lines
                .iter()
                .map(|&(pc, line)| obj::Line {
                    pc,
                    file: file.into(),
                    line,
                    col: 1,
                    source: String::new(),
                })
                .collect(),
            kfuncs: Vec::new(),
            core_relocations: 0,
            core_poisoned: Vec::new(),
            type_given: false,
            attach_type: None,
        }
    }

    // Slots: 0 mov (line 3), 1 jeq (4), 2 mov (5), 3 mov (6),
    // 4 exit (6), 5 jne (10, in f), 6 jeq (10), 7 exit (11).
    const TEXT: &str = "mov %r0, 0\njeq %r1, 0, +1\nmov %r0, 1\nmov %r2, 2\nexit\n\
                        jne %r1, 7, +1\njeq %r1, 8, +0\nexit";
    const LINES: &[(usize, u32)] = &[(0, 3), (1, 4), (2, 5), (3, 6), (5, 10), (7, 11)];

    #[test]
    fn lines_take_their_most_run_instruction_and_jumps_are_blocks() {
        let p = program(TEXT, "/s/p.c", LINES, &[("prog", 0), ("f", 5)]);
        let mut c = Coverage::new();
        let runs = [4, 4, 1, 4, 4, 4, 3, 4];
        let taken = [None, Some(3), None, None, None, Some(1), Some(0), None];
        c.add_program(&p, &runs, &taken);
        assert_eq!(c.line("/s/p.c", 5), Some(1));
        assert_eq!(c.line("/s/p.c", 10), Some(4));
        assert_eq!(c.line("/s/p.c", 7), None);
        let text = c.lcov("unit test");
        let expected = "TN:unit_test\nSF:/s/p.c\n\
            FN:3,prog\nFN:10,f\nFNDA:4,prog\nFNDA:4,f\nFNF:2\nFNH:2\n\
            BRDA:4,0,0,3\nBRDA:4,0,1,1\n\
            BRDA:10,0,0,1\nBRDA:10,0,1,3\nBRDA:10,1,0,0\nBRDA:10,1,1,3\n\
            BRF:6\nBRH:5\n\
            DA:3,4\nDA:4,4\nDA:5,1\nDA:6,4\nDA:10,4\nDA:11,4\n\
            LF:6\nLH:6\nend_of_record\n";
        assert_eq!(text, expected);
        let s = c.summary();
        assert_eq!((s.lines.found, s.lines.hit), (6, 6));
        assert_eq!((s.branches.found, s.branches.hit), (6, 5));
        assert_eq!((s.functions.found, s.functions.hit), (2, 2));
    }

    #[test]
    fn unreached_code_is_zero_and_unreached_jumps_dashes() {
        let p = program(TEXT, "/s/p.c", LINES, &[("prog", 0), ("f", 5)]);
        let mut c = Coverage::new();
        c.add_program(
            &p,
            &[1, 1, 0, 0, 1, 0, 0, 0],
            &[None, Some(1), None, None, None, Some(0), Some(0), None],
        );
        let text = c.lcov("");
        assert!(text.contains("FNDA:0,f\n"), "{text}");
        assert!(text.contains("BRDA:10,0,0,-\nBRDA:10,0,1,-\n"), "{text}");
        assert!(text.contains("DA:5,0\n"), "{text}");
        assert!(text.contains("LH:3\n"), "{text}");
    }

    #[test]
    fn coverages_add_up() {
        let p = program(TEXT, "/s/p.c", LINES, &[("prog", 0), ("f", 5)]);
        let (mut a, mut b) = (Coverage::new(), Coverage::new());
        let taken = [None, Some(1), None, None, None, Some(0), Some(0), None];
        a.add_program(&p, &[1; 8], &taken);
        b.add_program(&p, &[2; 8], &taken);
        let sum = a.clone() + &b;
        assert_eq!(sum.line("/s/p.c", 3), Some(3));
        let jumps = &sum.files()["/s/p.c"].branches[&4];
        assert_eq!(jumps[0].ways(), Some([2, 1]));
        assert_eq!(sum.files()["/s/p.c"].functions["f"].calls, 3);
        a += &b;
        assert_eq!(a, sum);
    }

    #[test]
    fn a_write_that_fails_names_the_path() {
        let e = Coverage::new()
            .write(std::path::Path::new("/nonexistent/dir/x.info"), "")
            .unwrap_err();
        assert!(
            e.to_string().starts_with("/nonexistent/dir/x.info: "),
            "{e}"
        );
    }
}
