//! A packet's flow key: its header fields at fixed places ([`key`]),
//! extracted in one pass ([`extract`]).

mod extract;
mod key;
mod matching;

pub use extract::*;
pub use key::{
    FieldSlot, PIPELINE_WORDS, PackedKey, PipelineKey, WORDS, classifier_fields, datapath_part,
    masked, pipeline_key, pipeline_slot_of, slot, slot_of,
};
pub use matching::{covers, key_match, overlaps};
