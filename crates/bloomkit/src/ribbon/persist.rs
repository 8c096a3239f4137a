//! Storing and loading a [`RibbonFilter`] in bloomkit's file format.
//!
//! Parameters: number of slots (u64), width (u32, 128), result bits (u32), ribbon seed (u32);
//! layout 2 adds the layout (u32, 2) and its number of shards (u32), 28 bytes where layout 1
//! has 20. The header's item count is [`RibbonFilter::len`]. Payload: the interleaved
//! solution, `num_slots / 64 · result_bits` words.

use std::io::Read;

use crate::error::{Error, Result};
use crate::format::{self, FilterKind, FormatReader, Header, Persist};
use crate::key::KeyHasher;

use super::equation::{BLOCK_SLOTS, MAX_RESULT_BITS, WIDTH};
use super::{Geometry, RibbonFilter, RibbonLayout};

/// The layout field's value for layout 2 (layout 1 has no such field).
const LAYOUT_HOMOGENEOUS: u32 = 2;

format::format_methods!(
    RibbonFilter,
    "ribbon filter",
    to_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::RibbonFilter;
        /// let f = RibbonFilter::build(0..1000u32, 0.01)?;
        /// let bytes = f.to_bytes();
        /// // 72 bytes of header and parameters, 17 blocks of 7 words, an 8-byte checksum.
        /// assert_eq!(bytes.len(), 72 + 17 * 7 * 8 + 8);
        /// assert_eq!(RibbonFilter::from_bytes(&bytes)?, f);
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    write_to: [
        ///
        /// # Examples
        ///
        /// ```
        /// let f = bloomkit::RibbonFilter::build(["a", "b"], 0.01)?;
        /// let mut file = Vec::new();
        /// f.write_to(&mut file)?;
        /// assert_eq!(file, f.to_bytes());
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    from_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::{Error, RibbonFilter};
        /// let mut bytes = RibbonFilter::build(["a"], 0.01)?.to_bytes();
        /// assert!(RibbonFilter::from_bytes(&bytes)?.contains("a"));
        /// bytes[80] ^= 1;
        /// assert!(matches!(RibbonFilter::from_bytes(&bytes), Err(Error::ChecksumMismatch { .. })));
        /// assert!(matches!(RibbonFilter::from_bytes(&bytes[..40]), Err(Error::Truncated)));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    read_from: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::RibbonFilter;
        /// // Two filters, one after the other, in one stream.
        /// let (a, b) = (RibbonFilter::build(["a"], 0.01)?, RibbonFilter::build(["b"], 0.001)?);
        /// let mut stream = a.to_bytes();
        /// stream.extend(b.to_bytes());
        /// let mut reader = &stream[..];
        /// assert_eq!(RibbonFilter::read_from(&mut reader)?, a);
        /// assert_eq!(RibbonFilter::read_from(&mut reader)?, b);
        /// assert!(reader.is_empty());
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
);

impl Persist for RibbonFilter {
    const KIND: FilterKind = FilterKind::Ribbon;

    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    fn item_count(&self) -> u64 {
        self.len
    }

    fn params(&self) -> Vec<u8> {
        let mut params = Vec::with_capacity(28);
        params.extend_from_slice(&self.num_slots.to_le_bytes());
        params.extend_from_slice(&(WIDTH as u32).to_le_bytes());
        params.extend_from_slice(&self.result_bits.to_le_bytes());
        params.extend_from_slice(&self.ribbon_seed.to_le_bytes());
        if self.layout == RibbonLayout::Homogeneous {
            params.extend_from_slice(&LAYOUT_HOMOGENEOUS.to_le_bytes());
            // At most u32::MAX: a plan with more shards is refused as too large.
            params.extend_from_slice(&(self.num_shards as u32).to_le_bytes());
        }
        params
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        self.solution.iter().copied()
    }

    fn payload_words_len(&self) -> u64 {
        self.solution.len() as u64
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let mut params = header.params();
        let num_slots = params.u64()?;
        let width = params.u32()?;
        let result_bits = params.u32()?;
        let ribbon_seed = params.u32()?;
        // Layout 1 ends here; layout 2 names itself and its shards.
        let layout = if header.params.len() > 20 {
            let layout = params.u32()?;
            let num_shards = params.u32()?;
            if layout != LAYOUT_HOMOGENEOUS {
                return Err(Error::corrupt(format!(
                    "the header's ribbon layout {layout} is not one this build knows \
                     ({LAYOUT_HOMOGENEOUS}); a newer bloomkit may read it"
                )));
            }
            Some(num_shards)
        } else {
            None
        };
        params.finish()?;
        let len = header.item_count;
        if u64::from(width) != WIDTH {
            return Err(Error::corrupt(format!(
                "the header's ribbon width {width} is not {WIDTH}"
            )));
        }
        if !(1..=MAX_RESULT_BITS).contains(&result_bits) {
            return Err(Error::corrupt(format!(
                "the header's result bits {result_bits} are not between 1 and {MAX_RESULT_BITS}"
            )));
        }
        if num_slots % BLOCK_SLOTS != 0 {
            return Err(Error::corrupt(format!(
                "the header's number of slots {num_slots} is not a multiple of {BLOCK_SLOTS}"
            )));
        }
        // A build sizes the filter from its keys: no keys, no slots; otherwise at least one
        // slot per key.
        if (len == 0) != (num_slots == 0) || len > num_slots {
            return Err(Error::corrupt(format!(
                "{len} keys cannot have built a ribbon filter of {num_slots} slots"
            )));
        }
        let geometry = match layout {
            None => Geometry::Standard {
                num_slots,
                ribbon_seed,
            },
            Some(num_shards) => homogeneous_geometry(num_slots, num_shards, ribbon_seed)?,
        };
        let num_words = num_slots / BLOCK_SLOTS * u64::from(result_bits);
        let payload_len = num_words.checked_mul(8).ok_or_else(|| {
            Error::corrupt(format!("a filter of {num_slots} slots is impossibly large"))
        })?;
        header.expect_payload_len(payload_len)?;
        let solution = payload.read_word_vec(num_words)?;
        Ok(Self::from_parts(
            solution,
            geometry,
            result_bits,
            header.hasher,
            len,
        ))
    }
}

/// Layout 2's geometry from its stored fields, checked: shards of equal whole blocks, none
/// exactly when there are no slots, and a ribbon seed of 0 (layout 2 never re-seeds).
fn homogeneous_geometry(num_slots: u64, num_shards: u32, ribbon_seed: u32) -> Result<Geometry> {
    if ribbon_seed != 0 {
        return Err(Error::corrupt(format!(
            "the header's ribbon seed {ribbon_seed} is not 0, as layout 2 requires"
        )));
    }
    let num_shards = u64::from(num_shards);
    if (num_shards == 0) != (num_slots == 0) {
        return Err(Error::corrupt(format!(
            "{num_shards} ribbon shards cannot hold {num_slots} slots"
        )));
    }
    let shard_slots = num_slots.checked_div(num_shards).unwrap_or(0);
    if shard_slots * num_shards != num_slots || shard_slots % BLOCK_SLOTS != 0 {
        return Err(Error::corrupt(format!(
            "{num_slots} slots do not split into {num_shards} ribbon shards of whole blocks \
             of {BLOCK_SLOTS}"
        )));
    }
    Ok(Geometry::Homogeneous {
        num_shards,
        shard_slots,
    })
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;
    use std::path::PathBuf;

    use super::super::shard_build::ShardPlan;
    use super::super::BuildPlan;
    use super::*;

    /// The recipe of `tests/data/ribbon-shards-v1.bkf`: layout 2 in three shards of 1,088
    /// slots, built from `golden:0` to `golden:2999` in passes of about one shard, which
    /// no public constructor makes below 2^20 keys. `tests/it/ribbon.rs` loads the file and
    /// checks its answers; this rebuilds it byte for byte. To write it (once):
    /// `BLOOMKIT_WRITE_GOLDEN=1 cargo test -p bloomkit --lib sharded_golden`.
    #[test]
    fn the_sharded_golden_file_is_rebuilt_byte_for_byte() {
        let key = |i: u64| format!("golden:{i}");
        let hashes: Vec<u64> = (0..3000).map(|i| crate::hash(&key(i))).collect();
        let plan = BuildPlan::Homogeneous(ShardPlan {
            num_shards: 3,
            shard_slots: 1088,
            pass_keys: 1000,
        });
        let f = RibbonFilter::build_planned(&hashes, 7, KeyHasher::default(), Some(plan)).unwrap();
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let bin_path = dir.join("ribbon-shards-v1.bkf");
        if std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some() && !bin_path.exists() {
            let mut answers = String::new();
            for i in 0..6000 {
                let answer = if f.contains(key(i).as_str()) {
                    "maybe"
                } else {
                    "no"
                };
                writeln!(answers, "{}\t{answer}", key(i)).unwrap();
            }
            std::fs::write(&bin_path, f.to_bytes()).unwrap();
            std::fs::write(dir.join("ribbon-shards-v1.answers"), answers).unwrap();
        }
        let stored = std::fs::read(&bin_path).unwrap();
        assert!(f.to_bytes() == stored, "a fresh build differs");
        // And the passes do not matter: one pass builds the same bytes.
        let one_pass = BuildPlan::Homogeneous(ShardPlan {
            num_shards: 3,
            shard_slots: 1088,
            pass_keys: 3000,
        });
        let g =
            RibbonFilter::build_planned(&hashes, 7, KeyHasher::default(), Some(one_pass)).unwrap();
        assert!(g.to_bytes() == stored);
    }
}
