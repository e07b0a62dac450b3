//! A packet classifier by tuple-space search with priority pruning: rules
//! (mask, value, priority, payload) over fixed-width keys of `u64` words,
//! and a lookup that returns the first matching rule, the one of lowest
//! priority number, the earliest inserted among equals (tc's order of
//! filters by pref).
//!
//! [`Tss`] keeps one hash table per distinct mask (a subtable) in order of
//! the best priority each holds; a lookup masks the key once per subtable,
//! probes it, and stops as soon as no later subtable can hold a better
//! match. [`Linear`] is the reference: the same API over one list.
//!
//! ```
//! use tss::{Rule, Tss};
//!
//! let mut t: Tss<2, &str> = Tss::new();
//! t.insert(Rule::new([0xff, 0], [10, 0], 20), "any port");
//! let web = t.insert(Rule::new([0xff, 0xffff], [10, 80], 10), "web");
//! assert_eq!(t.lookup(&[10, 80]).map(|m| *m.payload), Some("web"));
//! assert_eq!(t.lookup(&[10, 22]).map(|m| *m.payload), Some("any port"));
//! assert_eq!(t.lookup(&[11, 80]), None);
//! t.remove(web);
//! assert_eq!(t.lookup(&[10, 80]).map(|m| m.priority), Some(20));
//! ```

mod bucket;
mod hash;
mod linear;
mod rule;
mod subtable;
mod tss;

pub use linear::Linear;
pub use rule::{FieldBits, Key, LookupStats, Match, Rule, RuleId, RuleRef};
pub use tss::Tss;
