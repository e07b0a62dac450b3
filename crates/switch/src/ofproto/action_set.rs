//! The action set an entry's write-actions instruction fills: at most one
//! action of each kind (one set-field per field), run when the pipeline
//! ends in the order OpenFlow 1.3 (5.10) fixes, whatever the order written:
//! pop, push, TTL decrement, set-fields, queue, then a group, or else the
//! output.

use std::collections::BTreeMap;

use openflow::{Action, Field};

#[derive(Clone, Default, Debug)]
pub struct ActionSet {
    pop_vlan: bool,
    push_vlan: Option<u16>,
    dec_nw_ttl: bool,
    set_nw_ttl: Option<u8>,
    set_fields: BTreeMap<Field, Action>,
    set_queue: Option<u32>,
    group: Option<u32>,
    output: Option<Action>,
}

impl ActionSet {
    /// Writes `actions` into the set, each replacing one of its kind.
    pub fn write(&mut self, actions: &[Action]) {
        for a in actions {
            match a {
                Action::PopVlan => self.pop_vlan = true,
                Action::PushVlan(t) => self.push_vlan = Some(*t),
                Action::DecNwTtl => self.dec_nw_ttl = true,
                Action::SetNwTtl(t) => self.set_nw_ttl = Some(*t),
                Action::SetField(o) => {
                    self.set_fields.insert(o.field, a.clone());
                }
                Action::SetQueue(q) => self.set_queue = Some(*q),
                Action::Group(g) => self.group = Some(*g),
                Action::Output { .. } => self.output = Some(a.clone()),
                // Refused when the flow was added.
                _ => {}
            }
        }
    }

    /// The actions to run, in the specification's order.
    pub fn in_order(&self) -> Vec<Action> {
        let mut out = Vec::new();
        if self.pop_vlan {
            out.push(Action::PopVlan);
        }
        if let Some(t) = self.push_vlan {
            out.push(Action::PushVlan(t));
        }
        if self.dec_nw_ttl {
            out.push(Action::DecNwTtl);
        }
        if let Some(t) = self.set_nw_ttl {
            out.push(Action::SetNwTtl(t));
        }
        out.extend(self.set_fields.values().cloned());
        if let Some(q) = self.set_queue {
            out.push(Action::SetQueue(q));
        }
        match (self.group, &self.output) {
            (Some(g), _) => out.push(Action::Group(g)),
            (None, Some(o)) => out.push(o.clone()),
            (None, None) => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_runs_in_the_fixed_order_and_a_group_wins_over_output() {
        let mut s = ActionSet::default();
        s.write(&[
            Action::Output {
                port: 2,
                max_len: 0,
            },
            Action::DecNwTtl,
            Action::PushVlan(0x8100),
        ]);
        s.write(&[Action::Output {
            port: 3,
            max_len: 0,
        }]);
        assert_eq!(
            s.in_order(),
            vec![
                Action::PushVlan(0x8100),
                Action::DecNwTtl,
                Action::Output {
                    port: 3,
                    max_len: 0
                }
            ]
        );
        s.write(&[Action::Group(7)]);
        assert_eq!(s.in_order().last(), Some(&Action::Group(7)));
    }
}
