//! `tc filter change|replace ... handle H u32 ...` of a rule that exists:
//! the kernel's `u32_change` with a knode (`u32_init_knode` then
//! `u32_set_parms`). The rule keeps its selector, mark, flags and place;
//! what the command gives replaces its class (none given: none), its
//! actions, and its `link` and `indev` when given.

use super::{Knode, U32, handle, parse};
use crate::action::Actions;
use crate::error::TcError;

impl U32 {
    /// Changes the rule `handle` names; `None` when there is no such rule
    /// and `create` (replace) lets the command add one instead.
    pub(crate) fn change_rule(
        &mut self,
        handle: Option<&str>,
        args: &[&str],
        actions: &mut Actions,
        create: bool,
    ) -> Option<Result<(), TcError>> {
        let missing = || {
            (!create).then(|| {
                Err(
                    "Error: Need both RTM_NEWTFILTER and NLM_F_CREATE to create a new filter."
                        .into(),
                )
            })
        };
        let Some(h) = handle.and_then(handle::parse) else {
            return missing();
        };
        let Some((ht, found)) = self.get(h) else {
            return missing();
        };
        let spec = match parse::parse(handle, args, actions) {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        let refs = spec.actions.clone();
        let r = self.set_parms(ht, found, spec, actions);
        if r.is_err() {
            actions.release(&refs);
        }
        Some(r)
    }

    fn set_parms(
        &mut self,
        ht: u32,
        found: Option<usize>,
        spec: parse::Spec,
        actions: &mut Actions,
    ) -> Result<(), TcError> {
        let Some(i) = found else {
            return Err("Error: cls_u32: Key node id cannot be zero.".into());
        };
        let bucket = handle::bucket(spec.handle) as usize;
        let old = &self.tables[&ht].buckets[bucket][i];
        if old.flags != spec.flags {
            return Err("Error: cls_u32: Key node flags do not match passed flags.".into());
        }
        let ifindex = match &spec.indev {
            Some(name) => *self
                .devices
                .get(name)
                .ok_or_else(|| format!("Error: Network device not found. (indev \"{name}\")"))?,
            None => old.ifindex,
        };
        let link = match spec.link {
            Some(0) => None,
            Some(l) => {
                if !self.tables.contains_key(&l) {
                    return Err(format!(
                        "Error: cls_u32: Link hash table not found. (link {})",
                        handle::format(l)
                    )
                    .into());
                }
                if l == self.root {
                    return Err("Error: cls_u32: Not linking to root node.".into());
                }
                Some(l)
            }
            None => old.link,
        };
        let new = Knode {
            classid: spec.classid.unwrap_or(0),
            link,
            indev: spec.indev.or_else(|| old.indev.clone()),
            ifindex,
            actions: spec.actions,
            ..old.clone()
        };
        let old = std::mem::replace(
            &mut self.tables.get_mut(&ht).expect("found").buckets[bucket][i],
            new,
        );
        actions.release(&old.actions);
        for (l, up) in [(old.link, false), (link, true)] {
            if let Some(t) = l.and_then(|l| self.tables.get_mut(&l)) {
                if up {
                    t.refcnt += 1;
                } else {
                    t.refcnt -= 1;
                }
            }
        }
        Ok(())
    }
}
