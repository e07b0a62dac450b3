//! Coverage of packet programs by their C source: which lines, branches
//! and functions runs exercised, and how often.
//!
//! The VM counts per instruction (how often each ran, how often each
//! conditional jump jumped); [`Coverage::add_program`] maps those counts
//! to the source through the object's BTF line info (`.BTF.ext`,
//! [`obj::Program::lines`]) and function info ([`obj::Program::functions`]):
//!
//! - a **line**'s count is the count of its most-run instruction (a line
//!   split over several runs of instructions is not counted twice);
//! - a **branch** is a conditional jump: its line, its *block* (the jumps
//!   of one line, numbered from 0 in instruction order) and two ways,
//!   branch 0 the jump taken and branch 1 the fall-through (clang often
//!   inverts the C condition: the jump's way, not the C expression's);
//! - a **function** (the program and every subprogram linked into it)
//!   counts the runs of its first instruction: its calls.
//!
//! Coverages add up ([`Coverage::add`], `+`): several runs of a test
//! suite, over one program or several of one object, give the suite's.
//! [`Coverage::lcov`] writes the lcov tracefile `genhtml` draws.
//!
//! ```
//! use coverage::Coverage;
//!
//! // Slots 0-3 at lines 3-6 of /src/prog.c; the jump at line 4.
//! let program = obj::Program {
//!     name: "prog".into(),
//!     section: "xdp".into(),
//!     kind: obj::ProgramKind::SocketFilter,
//!     insns: isa::assemble("mov %r0, 0\njeq %r1, 0, +1\nmov %r0, 1\nexit").unwrap(),
//!     functions: vec![("prog".into(), 0)],
//!     lines: (0..4)
//!         .map(|pc| obj::Line {
//!             pc,
//!             file: "/src/prog.c".into(),
//!             line: pc as u32 + 3,
//!             col: 1,
//!             source: String::new(),
//!         })
//!         .collect(),
//!     kfuncs: Vec::new(),
//!     core_relocations: 0,
//!     core_poisoned: Vec::new(),
//!     type_given: false,
//!     attach_type: None,
//! };
//! // Two runs, the jump taken once.
//! let mut cov = Coverage::new();
//! cov.add_program(&program, &[2, 2, 1, 2], &[None, Some(1), None, None]);
//! assert_eq!(cov.line("/src/prog.c", 5), Some(1));
//! let text = cov.lcov("");
//! assert!(text.contains("DA:4,2\nDA:5,1\n"));
//! assert!(text.contains("BRDA:4,0,0,1\nBRDA:4,0,1,1\n"));
//! let twice = cov.clone() + &cov;
//! assert_eq!(twice.line("/src/prog.c", 4), Some(4));
//! ```

mod lcov;

use std::collections::BTreeMap;

use serde::Serialize;

pub use lcov::CoverageError;

/// The counts of one conditional jump.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Jump {
    /// Times it ran.
    pub runs: u64,
    /// Times it jumped (the others fell through).
    pub taken: u64,
}

impl Jump {
    /// Times each way went, branch 0 (taken) and 1 (fall-through); `None`
    /// for a jump never reached (lcov's `-`).
    pub fn ways(&self) -> Option<[u64; 2]> {
        (self.runs > 0).then(|| [self.taken, self.runs - self.taken])
    }
}

/// A function: the line it starts at and its calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Function {
    pub line: u32,
    pub calls: u64,
}

/// The coverage of one source file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileCoverage {
    /// Count per line with instructions.
    pub lines: BTreeMap<u32, u64>,
    /// Per line, its conditional jumps (blocks) in instruction order.
    pub branches: BTreeMap<u32, Vec<Jump>>,
    /// Per function name.
    pub functions: BTreeMap<String, Function>,
}

impl FileCoverage {
    fn add(&mut self, o: &FileCoverage) {
        for (line, n) in &o.lines {
            *self.lines.entry(*line).or_default() += n;
        }
        for (line, jumps) in &o.branches {
            let mine = self.branches.entry(*line).or_default();
            if mine.len() < jumps.len() {
                mine.resize(jumps.len(), Jump::default());
            }
            for (a, b) in mine.iter_mut().zip(jumps) {
                a.runs += b.runs;
                a.taken += b.taken;
            }
        }
        for (name, f) in &o.functions {
            let mine = self.functions.entry(name.clone()).or_insert(Function {
                line: f.line,
                calls: 0,
            });
            mine.calls += f.calls;
        }
    }
}

/// Found and hit: lines (or branches, or functions) with instructions,
/// and those run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub found: u64,
    pub hit: u64,
}

/// The totals lcov's `LF`/`LH`, `BRF`/`BRH` and `FNF`/`FNH` give, over
/// every file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub lines: Tally,
    pub branches: Tally,
    pub functions: Tally,
}

/// `lines 3/4  branches 1/2  functions 2/2` (hit/found), as reports show it.
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (l, b, n) = (self.lines, self.branches, self.functions);
        write!(
            f,
            "lines {}/{}  branches {}/{}  functions {}/{}",
            l.hit, l.found, b.hit, b.found, n.hit, n.found
        )
    }
}

/// Coverage per source file, summed over the runs and programs added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    files: BTreeMap<String, FileCoverage>,
}

impl Coverage {
    /// No coverage yet.
    pub fn new() -> Coverage {
        Coverage::default()
    }

    /// Adds the counts of `program`'s instructions: `runs[pc]` times the
    /// instruction at slot `pc` ran, `taken[pc]` times the conditional
    /// jump there jumped (`None` where there is none). Slots past the
    /// program's instructions are ignored; a program without line info
    /// adds nothing.
    pub fn add_program(&mut self, program: &obj::Program, runs: &[u64], taken: &[Option<u64>]) {
        let slots: usize = program.insns.iter().map(|i| i.slots()).sum();
        let mut one = Coverage::new();
        // Jumps seen per (file, line), to number their blocks.
        for (pc, &n) in runs.iter().enumerate().take(slots) {
            let Some(at) = program.line_at(pc).filter(|l| l.line > 0) else {
                continue;
            };
            let file = one.files.entry(at.file.clone()).or_default();
            let count = file.lines.entry(at.line).or_default();
            *count = (*count).max(n);
            if let Some(Some(t)) = taken.get(pc) {
                file.branches
                    .entry(at.line)
                    .or_default()
                    .push(Jump { runs: n, taken: *t });
            }
        }
        for (name, start) in &program.functions {
            let Some(at) = program.line_at(*start).filter(|l| l.line > 0) else {
                continue;
            };
            let calls = runs.get(*start).copied().unwrap_or(0);
            let file = one.files.entry(at.file.clone()).or_default();
            file.functions.insert(
                name.clone(),
                Function {
                    line: at.line,
                    calls,
                },
            );
        }
        self.add(&one);
    }

    /// Adds another coverage (of another run, or another program).
    pub fn add(&mut self, other: &Coverage) {
        for (name, f) in &other.files {
            self.files.entry(name.clone()).or_default().add(f);
        }
    }

    /// The source files, by name (as the object's line info names them).
    pub fn files(&self) -> &BTreeMap<String, FileCoverage> {
        &self.files
    }

    /// Whether there is nothing: no program added had line info.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// A line's count (`None`: no instruction of the programs added).
    pub fn line(&self, file: &str, line: u32) -> Option<u64> {
        self.files.get(file)?.lines.get(&line).copied()
    }

    /// Every line: file, line, count.
    pub fn lines(&self) -> impl Iterator<Item = (&str, u32, u64)> {
        self.files
            .iter()
            .flat_map(|(f, c)| c.lines.iter().map(move |(l, n)| (f.as_str(), *l, *n)))
    }

    /// Every branch: file, line, block, branch (0 taken, 1 fall-through)
    /// and its count (`None`: never reached).
    pub fn branches(&self) -> impl Iterator<Item = (&str, u32, usize, usize, Option<u64>)> {
        self.files.iter().flat_map(|(f, c)| {
            c.branches.iter().flat_map(move |(l, jumps)| {
                jumps.iter().enumerate().flat_map(move |(block, j)| {
                    let ways = j.ways();
                    (0..2).map(move |b| (f.as_str(), *l, block, b, ways.map(|w| w[b])))
                })
            })
        })
    }

    /// Found and hit lines, branches and functions.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for (_, _, n) in self.lines() {
            s.lines.found += 1;
            s.lines.hit += u64::from(n > 0);
        }
        for (_, _, _, _, n) in self.branches() {
            s.branches.found += 1;
            s.branches.hit += u64::from(n.is_some_and(|n| n > 0));
        }
        for f in self.files.values().flat_map(|c| c.functions.values()) {
            s.functions.found += 1;
            s.functions.hit += u64::from(f.calls > 0);
        }
        s
    }
}

impl std::ops::Add<&Coverage> for Coverage {
    type Output = Coverage;

    fn add(mut self, other: &Coverage) -> Coverage {
        Coverage::add(&mut self, other);
        self
    }
}

impl std::ops::AddAssign<&Coverage> for Coverage {
    fn add_assign(&mut self, other: &Coverage) {
        self.add(other);
    }
}
