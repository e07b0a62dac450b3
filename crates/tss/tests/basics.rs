//! The classifiers' semantics on small hand-made rule sets: first match by
//! priority then insertion, removal, replacement, pruning counts.

use tss::{Linear, Rule, Tss};

const ALL: u64 = u64::MAX;

fn both() -> (Tss<2, u32>, Linear<2, u32>) {
    (Tss::new(), Linear::new())
}

#[test]
fn lower_priority_wins_then_earlier_insertion() {
    let (mut t, mut l) = both();
    for (rule, p) in [
        (Rule::new([ALL, 0], [1, 0], 5), 0),
        (Rule::new([ALL, ALL], [1, 2], 7), 1),
        (Rule::new([0, ALL], [0, 2], 5), 2),
        (Rule::new([0, 0], [0, 0], 5), 3),
    ] {
        assert_eq!(t.insert(rule, p), l.insert(rule, p));
    }
    for (key, want) in [([1, 2], 0), ([0, 2], 2), ([9, 9], 3), ([1, 9], 0)] {
        assert_eq!(t.lookup(&key).map(|m| *m.payload), Some(want), "{key:?}");
        assert_eq!(l.lookup(&key).map(|m| *m.payload), Some(want), "{key:?}");
    }
    assert_eq!(t.len(), 4);
    assert_eq!(t.subtables(), 4);
}

#[test]
fn rules_sharing_a_masked_value_keep_their_order() {
    let mut t: Tss<1, u32> = Tss::new();
    let a = t.insert(Rule::new([0xff], [7], 3), 0);
    let b = t.insert(Rule::new([0xff], [0x107], 3), 1);
    let c = t.insert(Rule::new([0xff], [7], 1), 2);
    assert_eq!(t.subtables(), 1);
    assert_eq!(t.lookup(&[7]).map(|m| m.id), Some(c));
    t.remove(c);
    assert_eq!(t.lookup(&[7]).map(|m| m.id), Some(a));
    t.remove(a);
    assert_eq!(t.lookup(&[7]).map(|m| m.id), Some(b));
    assert_eq!(t.remove(b), Some(1));
    assert_eq!(t.remove(b), None);
    assert!(t.is_empty());
    assert_eq!(t.subtables(), 0);
    assert_eq!(t.lookup(&[7]), None);
}

#[test]
fn replace_keeps_the_id_and_the_place_among_equals() {
    let (mut t, mut l) = both();
    let a = t.insert(Rule::new([ALL, 0], [1, 0], 5), 10);
    l.insert(Rule::new([ALL, 0], [1, 0], 5), 10);
    let b = t.insert(Rule::new([ALL, 0], [2, 0], 5), 11);
    l.insert(Rule::new([ALL, 0], [2, 0], 5), 11);
    // a now matches what b matches, at b's priority, with a new mask: a was
    // inserted first, so it still wins.
    let r = Rule::new([ALL, ALL], [2, 3], 5);
    assert_eq!(t.replace(a, r, 20), Some(10));
    assert_eq!(l.replace(a, r, 20), Some(10));
    assert_eq!(t.lookup(&[2, 3]).map(|m| m.id), Some(a));
    assert_eq!(l.lookup(&[2, 3]).map(|m| m.id), Some(a));
    assert_eq!(t.lookup(&[2, 4]).map(|m| m.id), Some(b));
    assert_eq!(t.get(a).map(|g| g.rule), Some(r));
    let gone = tss_missing(&mut t);
    assert_eq!(t.replace(gone, r, 0), None);
    *t.get_mut(b).unwrap() = 99;
    let all: Vec<_> = t.iter().map(|g| (g.id, *g.payload)).collect();
    assert_eq!(all, [(a, 20), (b, 99)]);
    assert_eq!(t.subtables(), 2);
}

/// An id the classifier gave and no longer has.
fn tss_missing(t: &mut Tss<2, u32>) -> tss::RuleId {
    let id = t.insert(Rule::new([0, 0], [0, 0], 0), 0);
    t.remove(id);
    id
}

#[test]
fn lookups_stop_at_the_first_subtable_that_cannot_do_better() {
    let mut t: Tss<2, u32> = Tss::new();
    // Three masks, bests 1, 2, 3.
    t.insert(Rule::new([ALL, 0], [1, 0], 1), 0);
    t.insert(Rule::new([0, ALL], [0, 1], 2), 1);
    t.insert(Rule::new([ALL, ALL], [1, 1], 3), 2);
    t.insert(Rule::new([ALL, 0], [5, 0], 9), 3);
    let (m, s) = t.lookup_stats(&[1, 1]);
    assert_eq!((m.map(|m| *m.payload), s.probed), (Some(0), 1));
    let (m, s) = t.lookup_stats(&[2, 1]);
    assert_eq!((m.map(|m| *m.payload), s.probed), (Some(1), 2));
    let (m, s) = t.lookup_stats(&[5, 0]);
    assert_eq!((m.map(|m| *m.payload), s.probed), (Some(3), 3));
    let (m, s) = t.lookup_stats(&[7, 7]);
    assert_eq!((m, s.probed), (None, 3));
    // Removing the best rule reorders: the mask [0, ALL] comes first.
    let best = t.lookup(&[1, 0]).unwrap().id;
    t.remove(best);
    let (m, s) = t.lookup_stats(&[2, 1]);
    assert_eq!((m.map(|m| *m.payload), s.probed), (Some(1), 1));
}
