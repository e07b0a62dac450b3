//! An OpenFlow match as a (mask, value) pair over flow keys.

use openflow::{Match, error};

use super::key::{PIPELINE_WORDS, PipelineKey, pipeline_slot_of};
use crate::error::OfError;

/// The mask and (masked) value of `m`: a key matches when its bits under
/// the mask equal the value.
pub fn key_match(m: &Match) -> Result<(PipelineKey, PipelineKey), OfError> {
    let mut mask = [0u64; PIPELINE_WORDS];
    let mut value = [0u64; PIPELINE_WORDS];
    for oxm in &m.fields {
        let slot = pipeline_slot_of(oxm.field).ok_or_else(|| {
            OfError::new(
                error::BAD_MATCH,
                error::BAD_MATCH_BAD_FIELD,
                format!(
                    "match field {:?} is not supported by this switch",
                    oxm.field
                ),
            )
        })?;
        let field_mask = oxm.mask.unwrap_or(u128::MAX);
        let mut m1 = [0u64; PIPELINE_WORDS];
        slot.or_mask(&mut m1, field_mask);
        let mut v1 = [0u64; PIPELINE_WORDS];
        slot.set(&mut v1, oxm.value & field_mask);
        for i in 0..PIPELINE_WORDS {
            mask[i] |= m1[i];
            value[i] |= v1[i] & m1[i];
        }
    }
    Ok((mask, value))
}

/// Whether some key matches both (mask, value) pairs.
pub fn overlaps(a: &(PipelineKey, PipelineKey), b: &(PipelineKey, PipelineKey)) -> bool {
    (0..PIPELINE_WORDS).all(|i| (a.1[i] ^ b.1[i]) & a.0[i] & b.0[i] == 0)
}

/// Whether every key `narrow` matches, `wide` matches too (`wide` is
/// OpenFlow's non-strict match of a modify or delete).
pub fn covers(wide: &(PipelineKey, PipelineKey), narrow: &(PipelineKey, PipelineKey)) -> bool {
    (0..PIPELINE_WORDS)
        .all(|i| wide.0[i] & !narrow.0[i] == 0 && (narrow.1[i] ^ wide.1[i]) & wide.0[i] == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::slot;
    use openflow::{Field, Oxm};

    fn oxm(field: Field, value: u128, mask: Option<u128>) -> Oxm {
        Oxm { field, value, mask }
    }

    #[test]
    fn a_match_is_a_mask_and_value_over_keys() {
        let m = Match {
            fields: vec![
                oxm(Field::EthType, 0x0800, None),
                oxm(Field::Ipv4Dst, 0x0a00_0000, Some(0xff00_0000)),
            ],
        };
        let kv = key_match(&m).unwrap();
        let mut k = crate::flow::pipeline_key(&crate::flow::extract(&[], 1).0);
        slot::ETH_TYPE.set(&mut k, 0x0800);
        slot::NW_DST.set(&mut k, 0x0a01_0203);
        assert!((0..PIPELINE_WORDS).all(|i| k[i] & kv.0[i] == kv.1[i]));
        slot::NW_DST.set(&mut k, 0x0b01_0203);
        assert!(!(0..PIPELINE_WORDS).all(|i| k[i] & kv.0[i] == kv.1[i]));
    }

    #[test]
    fn covers_and_overlaps() {
        let m = |f: Vec<Oxm>| key_match(&Match { fields: f }).unwrap();
        let ip = m(vec![oxm(Field::EthType, 0x0800, None)]);
        let ten = m(vec![
            oxm(Field::EthType, 0x0800, None),
            oxm(Field::Ipv4Dst, 0x0a00_0000, Some(0xff00_0000)),
        ]);
        let arp = m(vec![oxm(Field::EthType, 0x0806, None)]);
        assert!(covers(&ip, &ten) && !covers(&ten, &ip));
        assert!(overlaps(&ip, &ten) && !overlaps(&ip, &arp));
        assert!(covers(&m(vec![]), &arp));
    }

    #[test]
    fn unparsed_fields_are_refused_with_bad_field() {
        let e = key_match(&Match {
            fields: vec![oxm(Field::MplsLabel, 1, None)],
        })
        .unwrap_err();
        assert_eq!((e.err_type, e.code), (4, 6));
    }
}
