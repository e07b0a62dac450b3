//! Why a tc command, rule or configuration was refused: [`TcError`], one
//! enum for the whole crate. Its messages are what `sluice tc` prints, in
//! tc's words where tc has them; a command that fails changes nothing.

use crate::protocol::InvalidProtocol;

/// Why tc refused a command, a rule or a configuration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TcError {
    /// A word of a command line, a rule or an action that tc does not
    /// take: the message names the word and says why (the parser's own
    /// text, as iproute2 words it where it has words for it).
    #[error("{0}")]
    Syntax(String),
    /// A filter's protocol that is neither a name nor a number.
    #[error(transparent)]
    Protocol(#[from] InvalidProtocol),
    /// A class id or handle that does not read as `MAJ:MIN`.
    #[error("invalid class ID \"{given}\": {why}")]
    ClassId { given: String, why: &'static str },
    /// A classifier kind sluice does not have.
    #[error("Unknown filter \"{0}\": sluice has u32, flower, matchall and bpf")]
    UnknownKind(String),
    /// A first word other than `qdisc`, `filter` and `actions`.
    #[error("Object \"{0}\" is unknown, try \"tc help\" (sluice takes qdisc, filter and actions).")]
    UnknownObject(String),
    /// `qdisc add` on a device that has its clsact qdisc already.
    #[error("Error: Exclusivity flag on, cannot modify. (dev {0} has a clsact qdisc)")]
    QdiscExists(String),
    /// `qdisc del` on a device without a clsact qdisc.
    #[error("Error: Cannot find specified qdisc on specified device ({0}).")]
    NoQdisc(String),
    /// A filter for a device without a clsact qdisc.
    #[error("Error: Cannot find specified qdisc on specified device ({0}: add clsact first).")]
    NoQdiscForFilter(String),
    /// A new filter at a priority the chain has a filter at already.
    #[error("chain {chain} has a filter at priority {prio} already")]
    PrioInUse { chain: u32, prio: u16 },
    /// A chain with no filters.
    #[error("no chain {0}")]
    NoChain(u32),
    /// No filter at this priority of the chain.
    #[error("no filter at priority {prio} in chain {chain}")]
    NoFilter { chain: u32, prio: u16 },
    /// An action added at an index in use.
    #[error("action {kind} index {index} exists already")]
    ActionExists { kind: &'static str, index: u32 },
    /// An action that is not in the table.
    #[error("action {kind} index {index} does not exist")]
    NoAction { kind: &'static str, index: u32 },
    /// `actions del` of an action rules still hold.
    #[error("action {kind} index {index} is bound to {binds} filter(s)")]
    ActionBound {
        kind: &'static str,
        index: u32,
        binds: u32,
    },
    /// A command of a batch failed: its line (the first, for a command
    /// continued over several) and why.
    #[error("line {line}: {source}")]
    AtLine { line: usize, source: Box<TcError> },
    /// A batch whose last line ends with `\`.
    #[error("line {0}: Missing continuation line")]
    MissingContinuation(usize),
    /// A tc configuration runs on one thread; a bench needs frames.
    #[error("no frames")]
    NoFrames,
    /// A packet the configuration could not run (a `bpf` program's fault).
    #[error("{0}")]
    Run(#[from] vm::VmError),
}

/// The parser's own text (the crate's parsers word their refusals as
/// they go: `?` on them gives [`TcError::Syntax`]).
impl From<String> for TcError {
    fn from(why: String) -> TcError {
        TcError::Syntax(why)
    }
}

impl From<&str> for TcError {
    fn from(why: &str) -> TcError {
        TcError::Syntax(why.to_string())
    }
}
