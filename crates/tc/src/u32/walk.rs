//! Classification, as the kernel's `u32_classify`: from the root table's
//! only bucket, each node's keys are compared with the packet's words at
//! `off + key.off + (off2 & key.offmask)`; a node that matches and links to
//! a table descends (pushing itself, at most 8 deep), choosing the bucket
//! by the hash fold of the word at `off + hoff` under the divisor mask and
//! moving `off2` (and with `eat`, `off`) to the next header; a table whose
//! nodes all fail pops back to the linking node, whose own terminal check
//! decides then. A terminal node checks `indev`, runs its actions, and
//! ends the walk unless they say `continue`. A header read outside the
//! packet ends the whole classification unmatched.

use super::sel::{EAT, OFFSET, TERMINAL, VAROFFSET};
use super::{Knode, U32};
use crate::classifier::{Cx, Match};
use crate::control::Control;
use crate::skb::Skb;

/// `TC_U32_MAXDEPTH`.
pub const MAX_DEPTH: usize = 8;

/// Where the walk is: a table, a bucket, a node's place in the bucket.
#[derive(Clone, Copy)]
struct At {
    ht: u32,
    bucket: usize,
    i: usize,
}

/// The linking nodes walked down from and their offsets (on the stack
/// frame: a walk does not allocate).
#[derive(Default)]
struct Stack {
    items: [Option<(At, i64)>; MAX_DEPTH],
    len: usize,
}

impl Stack {
    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, item: (At, i64)) {
        self.items[self.len] = Some(item);
        self.len += 1;
    }

    fn pop(&mut self) -> Option<(At, i64)> {
        self.len = self.len.checked_sub(1)?;
        self.items[self.len].take()
    }
}

enum Step {
    Node,
    Terminal,
    Pop,
}

impl U32 {
    fn knode(&self, at: At) -> Option<&Knode> {
        self.tables.get(&at.ht)?.buckets.get(at.bucket)?.get(at.i)
    }

    /// Runs the walk on `skb`.
    pub(super) fn walk(&mut self, skb: &mut Skb, cx: &mut Cx<'_>) -> Option<Match> {
        self.walk_from(skb, cx, 0, Step::Node)
    }

    /// Runs the root table's rule `i` as if the walk had reached it and
    /// its keys had matched (the fast path's hit, for a rule without a
    /// link, a mark or `nexthdr+` keys): the walk counts the nodes before
    /// it as visited, counts its mark check, runs its terminal check and
    /// actions, and on `continue` goes on with the next rule. (The rules
    /// passed over do not count their mark checks: without a mark, which
    /// only such rules have, `show` prints no count.)
    pub fn run_root_rule(&mut self, i: usize, skb: &mut Skb, cx: &mut Cx<'_>) -> Option<Match> {
        let at = At {
            ht: self.root,
            bucket: 0,
            i,
        };
        self.knode(at)?;
        self.visits += i as u64 + 1;
        if self.mark {
            let t = self.tables.get_mut(&at.ht).expect("present");
            t.buckets[0][i].mark_success += 1;
        }
        self.walk_from(skb, cx, i, Step::Terminal)
    }

    /// The walk from the root table's rule `i`, at `step`.
    fn walk_from(&mut self, skb: &mut Skb, cx: &mut Cx<'_>, i: usize, step: Step) -> Option<Match> {
        let mut stack = Stack::default();
        let mut at = At {
            ht: self.root,
            bucket: 0,
            i,
        };
        let (mut off, mut off2) = (0i64, 0i64);
        let len = skb.len() as i64;
        let mut step = step;
        loop {
            match step {
                Step::Node => {
                    let mark = self.mark;
                    if self.knode(at).is_none() {
                        step = Step::Pop;
                        continue;
                    }
                    self.visits += 1;
                    let n = self.knode(at).expect("present");
                    if n.flags & super::parse::SKIP_SW != 0 {
                        at.i += 1;
                        continue;
                    }
                    if mark {
                        if skb.mark & n.mark.1 != n.mark.0 {
                            at.i += 1;
                            continue;
                        }
                        let t = self.tables.get_mut(&at.ht).expect("walked");
                        t.buckets[at.bucket][at.i].mark_success += 1;
                    }
                    let n = self.knode(at).expect("walked");
                    let mut hit = true;
                    for k in &n.sel.keys {
                        let toff = off + i64::from(k.off) + (off2 & i64::from(k.offmask));
                        let word = skb.word(toff)?;
                        if (word ^ k.val) & k.mask != 0 {
                            hit = false;
                            break;
                        }
                    }
                    if !hit {
                        at.i += 1;
                        continue;
                    }
                    let Some(down) = n.link else {
                        step = Step::Terminal;
                        continue;
                    };
                    if stack.len() >= MAX_DEPTH {
                        return None;
                    }
                    stack.push((at, off));
                    let divisor = self.tables.get(&down).map_or(0, |t| t.divisor);
                    let mut bucket = 0;
                    if divisor != 0 {
                        let word = skb.word(off + i64::from(n.sel.hoff))?;
                        bucket = (divisor & n.sel.fold(word)) as usize;
                    }
                    let sel = &n.sel;
                    if sel.flags & (VAROFFSET | OFFSET | EAT) != 0 {
                        if sel.flags & (OFFSET | VAROFFSET) != 0 {
                            off2 = i64::from(sel.off) + 3;
                            if sel.flags & VAROFFSET != 0 {
                                let b = skb.bytes(off + i64::from(sel.offoff), 2)?;
                                let v = u16::from_be_bytes([b[0], b[1]]) & sel.offmask;
                                off2 += i64::from(
                                    u32::from(v)
                                        .checked_shr(u32::from(sel.offshift))
                                        .unwrap_or(0),
                                );
                            }
                            off2 &= !3;
                        }
                        if sel.flags & EAT != 0 {
                            off += off2;
                            off2 = 0;
                        }
                        if off >= len {
                            step = Step::Pop;
                            continue;
                        }
                    }
                    at = At {
                        ht: down,
                        bucket,
                        i: 0,
                    };
                }
                Step::Terminal => {
                    let n = self.knode(at).expect("walked");
                    step = Step::Node;
                    if n.sel.flags & TERMINAL == 0 || (n.ifindex != 0 && n.ifindex != skb.ifindex) {
                        at.i += 1;
                        continue;
                    }
                    let classid = n.classid;
                    let control = cx.exec(&n.actions, skb);
                    if control == Control::UNSPEC {
                        at.i += 1;
                        continue;
                    }
                    return Some(Match { classid, control });
                }
                Step::Pop => {
                    let (a, o) = stack.pop()?;
                    at = a;
                    off = o;
                    step = Step::Terminal;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Actions;
    use crate::classifier::Classifier;

    fn ipv4(src: [u8; 4], proto: u8, ihl: u8, ports: (u16, u16)) -> Skb {
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let mut ip = vec![0u8; usize::from(ihl) * 4];
        ip[0] = 0x40 | ihl;
        ip[9] = proto;
        ip[12..16].copy_from_slice(&src);
        f.extend(ip);
        f.extend(ports.0.to_be_bytes());
        f.extend(ports.1.to_be_bytes());
        f.extend([0u8; 16]);
        Skb::from_frame(&f, 1)
    }

    fn run(u: &mut U32, a: &mut Actions, skb: &Skb) -> Option<u32> {
        let mut skb = skb.clone();
        let skb = &mut skb;
        let mut emitted = Vec::new();
        let mut cx = Cx {
            actions: a,
            emitted: &mut emitted,
            bytes: skb.len() as u64,
        };
        u.classify(skb, &mut cx).map(|m| m.classid)
    }

    fn add(u: &mut U32, a: &mut Actions, handle: Option<&str>, words: &str) {
        let w: Vec<&str> = words.split_whitespace().collect();
        u.add(handle, &w, a)
            .unwrap_or_else(|e| panic!("{words}: {e}"));
    }

    #[test]
    fn eat_moves_to_the_next_header_and_the_hash_picks_the_bucket() {
        let (mut u, mut a) = (U32::new(), Actions::default());
        add(&mut u, &mut a, Some("1:"), "divisor 16");
        add(
            &mut u,
            &mut a,
            None,
            "match ip protocol 6 0xff offset at 0 mask 0f00 shift 6 eat hashkey mask 0x0000ffff at 20 link 1:",
        );
        add(
            &mut u,
            &mut a,
            None,
            "ht 1: sample tcp dst 80 0xffff divisor 16 match tcp dst 80 0xffff flowid 1:80",
        );
        add(
            &mut u,
            &mut a,
            None,
            "ht 1: sample tcp dst 443 0xffff divisor 16 match tcp dst 443 0xffff flowid 1:443",
        );
        // IHL 5 and IHL 6: eat finds the ports either way; but the hash
        // word is read before eating (at 20 from the IP header), so with
        // options it reads option bytes and picks bucket 0 (80's, not 443's).
        assert_eq!(
            run(&mut u, &mut a, &ipv4([1, 2, 3, 4], 6, 5, (1, 80))),
            Some(0x1_0080)
        );
        assert_eq!(
            run(&mut u, &mut a, &ipv4([1, 2, 3, 4], 6, 5, (1, 443))),
            Some(0x1_0443)
        );
        assert_eq!(
            run(&mut u, &mut a, &ipv4([1, 2, 3, 4], 6, 6, (1, 80))),
            Some(0x1_0080)
        );
        assert_eq!(
            run(&mut u, &mut a, &ipv4([1, 2, 3, 4], 6, 6, (1, 443))),
            None
        );
        assert_eq!(
            run(&mut u, &mut a, &ipv4([1, 2, 3, 4], 17, 5, (1, 80))),
            None
        );
    }

    #[test]
    fn a_failed_descent_pops_to_the_linking_nodes_terminal_check() {
        let (mut u, mut a) = (U32::new(), Actions::default());
        add(&mut u, &mut a, Some("2:"), "divisor 1");
        add(
            &mut u,
            &mut a,
            None,
            "ht 2: match ip src 9.9.9.9/32 flowid 1:9",
        );
        // Linking and terminal: when nothing below matches, it decides.
        add(&mut u, &mut a, None, "match u32 0 0 link 2: flowid 1:1");
        assert_eq!(
            run(&mut u, &mut a, &ipv4([9, 9, 9, 9], 6, 5, (1, 2))),
            Some(0x1_0009)
        );
        assert_eq!(
            run(&mut u, &mut a, &ipv4([1, 1, 1, 1], 6, 5, (1, 2))),
            Some(0x1_0001)
        );
        // A read past the end ends it all unmatched.
        add(
            &mut u,
            &mut a,
            None,
            "order 1 match u32 0 0 at 400 flowid 1:2",
        );
        assert_eq!(run(&mut u, &mut a, &ipv4([1, 1, 1, 1], 6, 5, (1, 2))), None);
    }

    #[test]
    fn loops_stop_at_the_depth_limit() {
        let (mut u, mut a) = (U32::new(), Actions::default());
        add(&mut u, &mut a, Some("3:"), "divisor 1");
        add(&mut u, &mut a, None, "ht 3: match u32 0 0 link 3:");
        add(&mut u, &mut a, None, "match u32 0 0 link 3: flowid 1:1");
        u.visits = 0;
        assert_eq!(run(&mut u, &mut a, &ipv4([1, 1, 1, 1], 6, 5, (1, 2))), None);
        assert_eq!(u.visits, 1 + MAX_DEPTH as u64);
    }
}
