//! The scalable filter in the shared file format.
//!
//! Parameters (32 bytes, little-endian): initial capacity (u64), target rate (f64 bits),
//! expansion (u32), tightening (f64 bits), flags (u32: bit 0 = non-scaling, bit 1 = classic
//! layers, bit 2 = classic layers probing by their derivation 2, bit 3 = blocked layers
//! probing by theirs; the rest zero). The seed and the item count are the header's.
//!
//! Payload, in 64-bit words: the layer count; then for each layer, oldest first, five words
//! (capacity, items, number of bits, number of hashes, planned rate as f64 bits); then each
//! layer's bits: 512-bit lines in order, as a blocked filter stores them, or with bit 1 set,
//! 64-bit words in order, as a classic filter stores them.
//!
//! Reading trusts nothing: the layer count is bounded by
//! [`ScalableBloomFilter::MAX_LAYERS`] and by the declared payload length before the
//! descriptors are read; every descriptor's capacity and rate must follow from the parameters
//! and the layers before, and every layer but the newest must be exactly full. A layer's bits
//! and probes are only range-checked, not re-derived: a file must stay readable when a later
//! version plans new layers differently. The declared
//! payload must be exactly the descriptors plus the bits they describe, and the items must sum
//! to the header's count. Bits are then read layer by layer into storage that grows only as
//! they arrive.

use std::io::Read;

use super::builder::Params;
use super::layer::Layer;
use super::layer::{LayerBits, LayerLayout};
use super::ScalableBloomFilter;
use crate::blocked::{BlockedBloomFilter, BlockedProbes};
use crate::classic::{BloomFilter, ClassicProbes};
use crate::error::{Error, Result};
use crate::format::{self, FilterKind, FormatReader, Header, Persist, Run};
use crate::key::KeyHasher;
use crate::sizing::{self, LINE_BITS};

format::format_methods!(
    ScalableBloomFilter,
    "scalable filter",
    to_bytes: [
        ///
        /// The parameters go in the header; the payload is the layer count, a descriptor per
        /// layer and every layer's bits.
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::ScalableBloomFilter;
        /// let mut f = ScalableBloomFilter::builder(10, 0.01).expansion(3).seed(9).build()?;
        /// for i in 0..100u32 { f.insert(&i)?; }
        /// let g = ScalableBloomFilter::from_bytes(&f.to_bytes())?;
        /// assert_eq!(g, f);
        /// assert_eq!((g.num_layers(), g.len(), g.expansion(), g.seed()), (f.num_layers(), f.len(), 3, 9));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    write_to: [
        ///
        /// # Examples
        ///
        /// ```
        /// let f = bloomkit::ScalableBloomFilter::new(10, 0.01)?;
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
        /// let f = bloomkit::ScalableBloomFilter::new(10, 0.01)?;
        /// let mut bytes = f.to_bytes();
        /// bytes.truncate(bytes.len() - 1);
        /// assert!(bloomkit::ScalableBloomFilter::from_bytes(&bytes).is_err());
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    read_from: [
        ///
        /// # Examples
        ///
        /// ```
        /// let f = bloomkit::ScalableBloomFilter::new(10, 0.01)?;
        /// let g = bloomkit::ScalableBloomFilter::read_from(&f.to_bytes()[..])?;
        /// assert_eq!(f, g);
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
);

/// Words per layer descriptor.
const DESCRIPTOR_WORDS: u64 = 5;

/// The chain never grows.
const FLAG_NON_SCALING: u32 = 1;

/// The layers are classic filters ([`LayerLayout::Classic`]); without it, blocked. Files
/// written before the classic layout existed have it clear and read as they always did.
const FLAG_CLASSIC_LAYERS: u32 = 2;

/// The classic layers derive their probes by rotating steps ([`ClassicProbes::Rotating`]);
/// without it, by double hashing, as every file before the rotating derivation. Set only with
/// [`FLAG_CLASSIC_LAYERS`]. A reader that does not know it refuses the file.
const FLAG_ROTATING_PROBES: u32 = 4;

/// The blocked layers derive their probes from two seeds ([`BlockedProbes::TwoSeeds`]);
/// without it, from one, as every file before the two-seed derivation. Set only without
/// [`FLAG_CLASSIC_LAYERS`]. A reader that does not know it refuses the file.
const FLAG_TWO_SEED_PROBES: u32 = 8;

/// A layer as its descriptor declares it, checked.
struct Descriptor {
    capacity: u64,
    items: u64,
    num_bits: u64,
    num_hashes: u32,
    fp_rate: f64,
}

fn encode_params(p: &Params) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    out.extend_from_slice(&p.initial_capacity.to_le_bytes());
    out.extend_from_slice(&p.fp_rate.to_bits().to_le_bytes());
    out.extend_from_slice(&p.expansion.to_le_bytes());
    out.extend_from_slice(&p.tightening.to_bits().to_le_bytes());
    let mut flags = 0;
    if p.non_scaling {
        flags |= FLAG_NON_SCALING;
    }
    if p.layout == LayerLayout::Classic {
        flags |= FLAG_CLASSIC_LAYERS;
        if p.probes == ClassicProbes::Rotating {
            flags |= FLAG_ROTATING_PROBES;
        }
    } else if p.blocked_probes == BlockedProbes::TwoSeeds {
        flags |= FLAG_TWO_SEED_PROBES;
    }
    out.extend_from_slice(&flags.to_le_bytes());
    out
}

fn decode_params(header: &Header) -> Result<Params> {
    let mut r = header.params();
    let initial_capacity = r.u64()?;
    let fp_rate = r.f64()?;
    let expansion = r.u32()?;
    let tightening = r.f64()?;
    let flags = r.u32()?;
    r.finish()?;
    let known =
        FLAG_NON_SCALING | FLAG_CLASSIC_LAYERS | FLAG_ROTATING_PROBES | FLAG_TWO_SEED_PROBES;
    let classic = flags & FLAG_CLASSIC_LAYERS != 0;
    let rotating_without_classic = flags & FLAG_ROTATING_PROBES != 0 && !classic;
    let two_seeds_with_classic = flags & FLAG_TWO_SEED_PROBES != 0 && classic;
    if flags & !known != 0 || rotating_without_classic || two_seeds_with_classic {
        return Err(Error::corrupt(format!(
            "unknown scalable filter flags {flags:#010x} (written by a newer bloomkit? \
             this build knows bits 0 to 3, bit 2 only with bit 1 and bit 3 only without it)"
        )));
    }
    let params = Params {
        initial_capacity,
        fp_rate,
        expansion,
        tightening,
        non_scaling: flags & FLAG_NON_SCALING != 0,
        layout: if flags & FLAG_CLASSIC_LAYERS != 0 {
            LayerLayout::Classic
        } else {
            LayerLayout::Blocked
        },
        // Blocked chains keep the builder's value, so that they compare equal.
        probes: if flags & FLAG_ROTATING_PROBES != 0 || !classic {
            ClassicProbes::Rotating
        } else {
            ClassicProbes::DoubleHashing
        },
        // Classic chains keep the builder's value, so that they compare equal.
        blocked_probes: if flags & FLAG_TWO_SEED_PROBES != 0 || classic {
            BlockedProbes::TwoSeeds
        } else {
            BlockedProbes::OneSeed
        },
    };
    // The same checks as a new filter's, reported as what they are here: bad data.
    params
        .validate()
        .map_err(|e| Error::corrupt(format!("the scalable filter's parameters: {e}")))?;
    Ok(params)
}

/// Checks one descriptor against the layer the chain's rules put at `index`.
fn check_descriptor(
    words: &[u64],
    layout: LayerLayout,
    index: usize,
    is_newest: bool,
    expected_capacity: u64,
    expected_rate: f64,
) -> Result<Descriptor> {
    let bad = |what: String| Error::corrupt(format!("layer {index}: {what}"));
    let [capacity, items, num_bits, num_hashes, rate_bits] = words else {
        return Err(bad("incomplete descriptor".into()));
    };
    let (capacity, items, num_bits, num_hashes) = (*capacity, *items, *num_bits, *num_hashes);
    let fp_rate = f64::from_bits(*rate_bits);
    if capacity != expected_capacity {
        return Err(bad(format!(
            "capacity {capacity}, but the chain's parameters give {expected_capacity}"
        )));
    }
    // Rates are computed by the same multiplications when written and here: equal bits.
    if fp_rate.to_bits() != expected_rate.to_bits() {
        return Err(bad(format!(
            "rate {fp_rate:e}, but the chain's parameters give {expected_rate:e}"
        )));
    }
    if items > capacity || (!is_newest && items != capacity) {
        return Err(bad(format!(
            "{items} items for a capacity of {capacity} (older layers are exactly full, the \
             newest at most full)"
        )));
    }
    let granularity = match layout {
        LayerLayout::Blocked => LINE_BITS,
        LayerLayout::Classic => 64,
    };
    if num_bits == 0 || num_bits % granularity != 0 {
        return Err(bad(format!(
            "{num_bits} bits is not a positive multiple of {granularity}"
        )));
    }
    let num_hashes = u32::try_from(num_hashes)
        .ok()
        .filter(|&k| sizing::check_num_hashes(k).is_ok())
        .ok_or_else(|| bad(format!("{num_hashes} hashes is out of range")))?;
    Ok(Descriptor {
        capacity,
        items,
        num_bits,
        num_hashes,
        fp_rate,
    })
}

impl Persist for ScalableBloomFilter {
    const KIND: FilterKind = FilterKind::Scalable;

    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    fn item_count(&self) -> u64 {
        self.len()
    }

    fn params(&self) -> Vec<u8> {
        encode_params(&self.params)
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        let descriptors = self.layers.iter().flat_map(|l| {
            [
                l.capacity,
                l.items(),
                l.filter.num_bits(),
                l.filter.num_hashes() as u64,
                l.fp_rate.to_bits(),
            ]
        });
        let bits = self.layers.iter().flat_map(|l| l.filter.words());
        std::iter::once(self.layers.len() as u64)
            .chain(descriptors)
            .chain(bits)
    }

    fn payload_runs(&self) -> impl Iterator<Item = Run<'_>> + '_ {
        // The count and descriptors as words (from `payload_words`, which they lead), then
        // each layer's bits where they lie.
        let head = 1 + DESCRIPTOR_WORDS as usize * self.layers.len();
        let bits = self
            .layers
            .iter()
            .flat_map(|l| l.filter.word_runs().map(Run::Words));
        self.payload_words().take(head).map(Run::Word).chain(bits)
    }

    fn payload_words_len(&self) -> u64 {
        let bits: u64 = self.layers.iter().map(|l| l.filter.num_bits() / 64).sum();
        1 + DESCRIPTOR_WORDS * self.layers.len() as u64 + bits
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let params = decode_params(header)?;
        let declared_words = header.payload_len / 8;
        if !header.payload_len.is_multiple_of(8) || declared_words == 0 {
            return Err(Error::corrupt(format!(
                "a payload of {} bytes is not a layer count and whole words",
                header.payload_len
            )));
        }

        let mut count = 0u64;
        payload.read_words(1, |w| {
            count = w[0];
            Ok(())
        })?;
        let max_layers = if params.non_scaling {
            1
        } else {
            ScalableBloomFilter::MAX_LAYERS as u64
        };
        // Bound the count, and check its descriptors fit the declared payload, before reading
        // them.
        if count == 0 || count > max_layers {
            return Err(Error::corrupt(format!(
                "{count} layers (a {} filter has 1 to {max_layers})",
                if params.non_scaling {
                    "non-scaling"
                } else {
                    "scalable"
                }
            )));
        }
        let descriptor_words = DESCRIPTOR_WORDS * count;
        if 1 + descriptor_words > declared_words {
            return Err(Error::corrupt(format!(
                "{count} layer descriptors do not fit in a payload of {} bytes",
                header.payload_len
            )));
        }
        let mut words = Vec::with_capacity(descriptor_words as usize);
        payload.read_words(descriptor_words, |chunk| {
            words.extend_from_slice(chunk);
            Ok(())
        })?;

        let mut descriptors = Vec::with_capacity(count as usize);
        let mut total_words = 1 + descriptor_words;
        let mut total_items = 0u64;
        let mut expected_capacity = Some(params.initial_capacity);
        let mut expected_rate = params.first_rate();
        for (index, d) in words.chunks_exact(DESCRIPTOR_WORDS as usize).enumerate() {
            let capacity = expected_capacity.ok_or_else(|| {
                Error::corrupt(format!("layer {index}: its capacity would overflow"))
            })?;
            let is_newest = index as u64 == count - 1;
            let d = check_descriptor(d, params.layout, index, is_newest, capacity, expected_rate)?;
            total_words = (d.num_bits / 64)
                .checked_add(total_words)
                .ok_or_else(|| Error::corrupt("the layers' sizes overflow"))?;
            total_items = total_items
                .checked_add(d.items)
                .ok_or_else(|| Error::corrupt("the layers' item counts overflow"))?;
            expected_capacity = d.capacity.checked_mul(params.expansion as u64);
            expected_rate = params.next_rate(d.fp_rate, expected_capacity.unwrap_or(u64::MAX));
            descriptors.push(d);
        }
        let expected_len = total_words
            .checked_mul(8)
            .ok_or_else(|| Error::corrupt("the layers' sizes overflow"))?;
        header.expect_payload_len(expected_len)?;
        if total_items != header.item_count {
            return Err(Error::corrupt(format!(
                "the layers hold {total_items} items but the header counts {}",
                header.item_count
            )));
        }

        let mut layers = Vec::with_capacity(descriptors.len());
        for (i, d) in descriptors.into_iter().enumerate() {
            let filter = match params.layout {
                LayerLayout::Blocked => {
                    let lines = payload.read_line_array(d.num_bits / LINE_BITS)?;
                    LayerBits::Blocked(BlockedBloomFilter::from_parts(
                        lines,
                        d.num_hashes,
                        params.blocked_probes,
                        header.hasher,
                        d.items,
                    ))
                }
                LayerLayout::Classic => {
                    let words = payload.read_word_vec(d.num_bits / 64)?;
                    LayerBits::Classic(BloomFilter::from_words(
                        words,
                        d.num_bits,
                        d.num_hashes,
                        header.hasher,
                        d.items,
                        params.probes,
                    ))
                }
            };
            // Each counted insert set at least one bit that was zero in its layer: a layer
            // cannot count more keys than it has ones.
            let ones = filter.count_ones();
            if d.items > ones {
                return Err(Error::corrupt(format!(
                    "layer {i} claims {} items but has only {ones} bits set",
                    d.items
                )));
            }
            layers.push(Layer {
                filter,
                capacity: d.capacity,
                fp_rate: d.fp_rate,
            });
        }
        Ok(ScalableBloomFilter {
            params,
            hasher: header.hasher,
            layers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_32_bytes_in_documented_order() {
        let f = ScalableBloomFilter::builder(7, 0.01)
            .expansion(3)
            .tightening(0.75)
            .non_scaling(true)
            .build()
            .unwrap();
        let p = f.params();
        assert_eq!(p.len(), 32);
        assert_eq!(&p[0..8], &7u64.to_le_bytes());
        assert_eq!(&p[8..16], &0.01f64.to_bits().to_le_bytes());
        assert_eq!(&p[16..20], &3u32.to_le_bytes());
        assert_eq!(&p[20..28], &0.75f64.to_bits().to_le_bytes());
        // Non-scaling, blocked layers probing from two seeds.
        assert_eq!(
            &p[28..32],
            &(FLAG_NON_SCALING | FLAG_TWO_SEED_PROBES).to_le_bytes()
        );
    }

    /// Each layout and derivation has its flags, and reads back as written; bit 3 with
    /// classic layers is refused, naming the bits this build knows.
    #[test]
    fn probe_derivation_flags() {
        let flags =
            |f: &ScalableBloomFilter| u32::from_le_bytes(f.params()[28..32].try_into().unwrap());
        let one_seed = ScalableBloomFilter::builder(7, 0.01)
            .blocked_probes(BlockedProbes::OneSeed)
            .build()
            .unwrap();
        let classic = ScalableBloomFilter::builder(7, 0.01)
            .layout(LayerLayout::Classic)
            .build()
            .unwrap();
        let cases = [
            (
                ScalableBloomFilter::new(7, 0.01).unwrap(),
                FLAG_TWO_SEED_PROBES,
            ),
            (one_seed, 0),
            (classic, FLAG_CLASSIC_LAYERS | FLAG_ROTATING_PROBES),
        ];
        for (f, want) in cases {
            assert_eq!(flags(&f), want);
            let back = ScalableBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            assert_eq!(back, f);
            assert_eq!(back.blocked_probes(), f.blocked_probes());
        }
        let mut header = format::FormatReader::new(
            &ScalableBloomFilter::new(7, 0.01).unwrap().to_bytes()[..],
            None,
        )
        .header()
        .unwrap();
        header.params[28..32]
            .copy_from_slice(&(FLAG_CLASSIC_LAYERS | FLAG_TWO_SEED_PROBES).to_le_bytes());
        let err = decode_params(&header).unwrap_err().to_string();
        assert!(err.contains("bit 3 only without it"), "{err}");
    }

    #[test]
    fn payload_is_count_descriptors_then_lines() {
        let mut f = ScalableBloomFilter::new(10, 0.01).unwrap();
        for i in 0..15u32 {
            f.insert(&i).unwrap();
        }
        let words: Vec<u64> = f.payload_words().collect();
        assert_eq!(words.len() as u64, f.payload_words_len());
        assert_eq!(words[0], 2);
        let l0: Vec<u64> = f.layers[0].filter.words().collect();
        let first = [
            10,
            10,
            f.layers[0].filter.num_bits(),
            f.layers[0].filter.num_hashes() as u64,
            0.005f64.to_bits(),
        ];
        assert_eq!(&words[1..6], first.as_slice());
        assert_eq!(words[6..11][0], 20);
        assert_eq!(words[6..11][1], 5);
        assert_eq!(&words[11..11 + l0.len()], l0.as_slice());
    }
}
