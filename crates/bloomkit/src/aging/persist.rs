//! [`AgingBloomFilter`] in the shared file format (kind 7): generations, bits, probes and the probe
//! derivation as parameters; the generations' item counts, then their lines, newest first, as
//! payload.

use std::io::Read;

use super::{check_generations, total_item_count, AgingBloomFilter, MAX_GENERATIONS};
use crate::error::{Error, Result};
use crate::format::{self, FilterKind, FormatReader, Header, Persist, Run};
use crate::key::KeyHasher;
use crate::sizing::{self, LINE_BITS};
use crate::{BlockedBloomFilter, BlockedProbes};

format::format_methods!(
    AgingBloomFilter,
    "aging filter",
    to_bytes: [
        ///
        /// Parameters (20 bytes, or 16): the number of generations `G` (u32, 1 to 64), the bits
        /// per generation `m` (u64, a positive multiple of 512), the hashes `k` (u32, 1 to 64),
        /// and the probe derivation (u32: 2; absent for the first,
        /// [`BlockedProbes::OneSeed`](crate::BlockedProbes::OneSeed)).
        /// Payload (`G·(8 + m / 8)` bytes), all little-endian u64 words: the `G` generations' item
        /// counts, newest first (each at most the bits set in its generation), then the `G`
        /// generations' bits, newest first, each laid out as a blocked filter's payload (kind 2).
        /// Probes are the blocked filter's, in every generation. The header's item count is the
        /// sum of the generations'.
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::AgingBloomFilter;
        ///
        /// let mut f = AgingBloomFilter::builder(1000, 0.01).generations(3).build()?;
        /// f.insert("a");
        /// f.rotate();
        /// let bytes = f.to_bytes();
        /// assert_eq!(bytes.len(), 44 + 20 + 3 * 8 + f.num_bits() as usize / 8 + 8);
        /// let g = AgingBloomFilter::from_bytes(&bytes)?;
        /// assert_eq!(g, f);
        /// assert!(g.generation(1).unwrap().contains("a"));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    write_to: [
        ///
        /// # Examples
        ///
        /// ```
        /// let f = bloomkit::AgingBloomFilter::new(1000, 0.01)?;
        /// let mut out = Vec::new();
        /// f.write_to(&mut out)?;
        /// assert_eq!(out, f.to_bytes());
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    from_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::{AgingBloomFilter, BlockedBloomFilter, Error};
        ///
        /// let blocked = BlockedBloomFilter::new(100, 0.01)?.to_bytes();
        /// assert!(matches!(AgingBloomFilter::from_bytes(&blocked), Err(Error::WrongKind { .. })));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    read_from: [
        ///
        /// # Examples
        ///
        /// ```
        /// let mut f = bloomkit::AgingBloomFilter::new(100, 0.01)?;
        /// f.insert("a");
        /// let bytes = f.to_bytes();
        /// let g = bloomkit::AgingBloomFilter::read_from(&bytes[..])?;
        /// assert!(g.contains("a") && g.len() == 1);
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
);

impl Persist for AgingBloomFilter {
    const KIND: FilterKind = FilterKind::Aging;

    fn key_hasher(&self) -> KeyHasher {
        AgingBloomFilter::key_hasher(self)
    }

    fn item_count(&self) -> u64 {
        AgingBloomFilter::len(self)
    }

    fn params(&self) -> Vec<u8> {
        let mut params = Vec::with_capacity(16);
        params.extend_from_slice(&self.num_generations().to_le_bytes());
        params.extend_from_slice(&self.num_bits_per_generation().to_le_bytes());
        params.extend_from_slice(&self.num_hashes().to_le_bytes());
        format::push_derivation(&mut params, self.probes().code());
        params
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        let counts = self.generations.iter().map(|g| g.len());
        counts.chain(self.generations.iter().flat_map(|g| g.lines().words()))
    }

    fn payload_runs(&self) -> impl Iterator<Item = Run<'_>> + '_ {
        let counts = self.generations.iter().map(|g| Run::Word(g.len()));
        let lines = self.generations.iter().flat_map(|g| g.lines().line_words());
        counts.chain(lines.map(Run::Words))
    }

    fn payload_words_len(&self) -> u64 {
        self.num_generations() as u64 * (1 + self.num_bits_per_generation() / 64)
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let mut params = header.params();
        let generations = params.u32()?;
        let num_bits = params.u64()?;
        let num_hashes = params.u32()?;
        let probes = params.derivation(BlockedProbes::OneSeed, BlockedProbes::from_code, "2")?;
        params.finish()?;
        if check_generations(generations).is_err() {
            return Err(Error::corrupt(format!(
                "the header's number of generations {generations} is not 1 to {MAX_GENERATIONS}"
            )));
        }
        if num_bits == 0 || num_bits % LINE_BITS != 0 {
            return Err(Error::corrupt(format!(
                "the header's bits per generation {num_bits} is not a positive multiple of \
                 {LINE_BITS}"
            )));
        }
        if sizing::check_num_hashes(num_hashes).is_err() {
            return Err(Error::corrupt(format!(
                "the header's number of hashes {num_hashes} is out of range"
            )));
        }
        // One count word and the lines' words per generation, in bytes; a size that does not
        // even fit in a u64 cannot be a real payload.
        let expected = (num_bits / 64 + 1)
            .checked_mul(generations as u64)
            .and_then(|words| words.checked_mul(8))
            .ok_or_else(|| Error::corrupt("the header's filter size overflows"))?;
        header.expect_payload_len(expected)?;

        // At most 64 words: bounded by the check above, not by the input.
        let mut counts = Vec::with_capacity(generations as usize);
        payload.read_words(generations as u64, |chunk| {
            counts.extend_from_slice(chunk);
            Ok(())
        })?;

        let num_lines = num_bits / LINE_BITS;
        let mut all = Vec::with_capacity(generations as usize);
        for (age, &count) in counts.iter().enumerate() {
            let lines = payload.read_line_array(num_lines)?;
            let generation =
                BlockedBloomFilter::from_parts(lines, num_hashes, probes, header.hasher, count);
            // Each counted insert set at least one bit that was zero: a generation cannot
            // count more keys than it has ones.
            if count > generation.count_ones() {
                return Err(Error::corrupt(format!(
                    "generation {age} claims {count} items but has only {} bits set",
                    generation.count_ones()
                )));
            }
            all.push(generation);
        }
        if total_item_count(&all) != header.item_count {
            return Err(Error::corrupt(format!(
                "the header's item count {} is not the sum of the generations' {}",
                header.item_count,
                total_item_count(&all)
            )));
        }
        Ok(AgingBloomFilter { generations: all })
    }
}
