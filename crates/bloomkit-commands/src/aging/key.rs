//! [`AgingKey`]: what an `AF.*` key holds, the library's [`AgingBloomFilter`] with the
//! parameters it was reserved with and its rotation schedule, and its storage encoding.

use bloomkit::{AgingBloomFilter, Error};

/// An `AF.*` key's value: the aging filter, the parameters it was reserved with (which the
/// filter's own encoding does not keep), and when it last rotated.
///
/// The rotation schedule is anchored: with a period P, the rotations are due at
/// `last_rotation_ms + P`, `+ 2P`... whatever moment a host's timer notices them, so a key
/// keeps its rhythm across restarts and failovers ([`AgingKey::due_rotation`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AgingKey {
    /// The generations.
    pub(crate) filter: AgingBloomFilter,
    /// `error_rate`: the rate of the whole window, each generation holding `capacity`.
    pub(crate) error_rate: f64,
    /// `capacity`: items per generation (one period's distinct items).
    pub(crate) capacity: u64,
    /// `PERIOD`, in seconds; 0 when the key rotates only on `AF.ROTATE`.
    pub(crate) period_secs: u64,
    /// When the key was created or last rotated, in milliseconds since the Unix epoch.
    pub(crate) last_rotation_ms: u64,
}

/// What an encoded [`AgingKey`] starts with: neither bloomkit's magic (`\x89BKF`) nor a
/// partial dump's (`\x89BKP`), so none of the three can be taken for another.
pub const MAGIC: [u8; 8] = *b"\x89BKA\r\n\x1a\n";

/// The encoding's version, the byte after [`MAGIC`]: a reader refuses any other.
const VERSION: u8 = 1;

/// The fixed fields after the magic: the version byte, then four little-endian words.
const FIXED_LEN: usize = 1 + 4 * 8;

/// The bytes before the filter's own encoding: [`MAGIC`] and the fixed fields.
const PREFIX_LEN: usize = MAGIC.len() + FIXED_LEN;

impl AgingKey {
    /// The filter.
    pub fn filter(&self) -> &AgingBloomFilter {
        &self.filter
    }

    /// The rate of the whole window, as reserved.
    pub fn error_rate(&self) -> f64 {
        self.error_rate
    }

    /// Items per generation, as reserved.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The rotation period in seconds; 0 if the key rotates only on `AF.ROTATE`.
    pub fn period_secs(&self) -> u64 {
        self.period_secs
    }

    /// When the key was created or last rotated, in milliseconds since the Unix epoch.
    pub fn last_rotation_ms(&self) -> u64 {
        self.last_rotation_ms
    }

    /// Whether a generation holds more items than `capacity`: the window's rate is then
    /// past its target (what `INFO filters` counts).
    pub fn past_capacity(&self) -> bool {
        (0..self.filter.num_generations() as usize)
            .filter_map(|age| self.filter.generation(age))
            .any(|g| g.len() > self.capacity)
    }

    /// The time (ms since the epoch) of the rotation a host's timer should run now
    /// (`AF.ROTATE key AT <time>`), or `None` if none is due at `now_ms` or the key has no
    /// period. Rotations are due every period from [`last_rotation_ms`](Self::last_rotation_ms);
    /// when more than the generations' number are overdue (a host down for long), the first
    /// due is the one after which exactly `generations` remain, since those clear every
    /// generation whatever came before. A host calls it again after each rotation until
    /// `None`.
    pub fn due_rotation(&self, now_ms: u64) -> Option<u64> {
        let period_ms = self.period_secs.checked_mul(1000).filter(|&p| p > 0)?;
        let missed = now_ms.checked_sub(self.last_rotation_ms)? / period_ms;
        if missed == 0 {
            return None;
        }
        let generations = u64::from(self.filter.num_generations());
        let skip = missed.saturating_sub(generations);
        Some(
            self.last_rotation_ms
                .saturating_add(period_ms.saturating_mul(skip + 1)),
        )
    }

    /// Milliseconds from `now_ms` to the next rotation due (0 if overdue), or `None` without
    /// a period.
    pub fn ms_to_next_rotation(&self, now_ms: u64) -> Option<u64> {
        let period_ms = self.period_secs.checked_mul(1000).filter(|&p| p > 0)?;
        Some(
            self.last_rotation_ms
                .saturating_add(period_ms)
                .saturating_sub(now_ms),
        )
    }

    /// Bytes held, for `INFO memory` and `--maxmemory`.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() - std::mem::size_of::<AgingBloomFilter>()
            + self.filter.memory_bytes()
    }

    /// The length of the encoding, computed without encoding.
    pub fn encoded_len(&self) -> usize {
        MAGIC.len() + FIXED_LEN + self.filter.encoded_len()
    }

    /// Writes the encoding: [`MAGIC`], the version (1), then as little-endian words the
    /// error rate's bits, the capacity, the period in seconds and the last rotation in
    /// milliseconds, then the filter in bloomkit's format (which has its own checksum).
    ///
    /// # Errors
    ///
    /// Whatever writing returns.
    pub fn write_to<W: std::io::Write>(&self, mut writer: W) -> bloomkit::Result<()> {
        let mut fixed = Vec::with_capacity(MAGIC.len() + FIXED_LEN);
        fixed.extend_from_slice(&MAGIC);
        fixed.push(VERSION);
        for word in [
            self.error_rate.to_bits(),
            self.capacity,
            self.period_secs,
            self.last_rotation_ms,
        ] {
            fixed.extend_from_slice(&word.to_le_bytes());
        }
        writer.write_all(&fixed)?;
        self.filter.write_to(writer)
    }

    /// The header of an encoded key, as `SCANDUMP` cuts it: the fixed fields and the
    /// filter's own header (`(header_len, encoded_len)`), read from the encoding's first
    /// bytes without the rest; `Ok(None)` while `prefix` is too short to tell.
    ///
    /// # Errors
    ///
    /// [`Error::BadMagic`] without the magic, [`Error::Corrupt`] for another version or a
    /// filter of another kind than aging, the filter header's errors.
    pub(crate) fn peek_header(prefix: &[u8]) -> bloomkit::Result<Option<(usize, u64)>> {
        let magic_len = prefix.len().min(MAGIC.len());
        if prefix[..magic_len] != MAGIC[..magic_len] {
            return Err(Error::BadMagic);
        }
        let Some(&version) = prefix.get(MAGIC.len()) else {
            return Ok(None);
        };
        check_version(version)?;
        let Some(filter) = prefix.get(PREFIX_LEN..) else {
            return Ok(None);
        };
        let Some(info) = bloomkit::format::peek_header(filter)? else {
            return Ok(None);
        };
        if info.kind != bloomkit::FilterKind::Aging {
            return Err(Error::Corrupt {
                reason: format!(
                    "an aging key's encoding holding a {} filter, where an aging filter is \
                     expected",
                    info.kind
                ),
            });
        }
        Ok(Some((
            PREFIX_LEN + info.header_len,
            PREFIX_LEN as u64 + info.encoded_len,
        )))
    }

    /// Reads what [`write_to`](Self::write_to) wrote.
    ///
    /// # Errors
    ///
    /// [`Error::BadMagic`] without the magic; [`Error::Corrupt`] for another version or a
    /// parameter out of its range (with what was expected); the filter reader's errors.
    pub fn from_bytes(bytes: &[u8]) -> bloomkit::Result<AgingKey> {
        let rest = bytes.strip_prefix(&MAGIC).ok_or(Error::BadMagic)?;
        let (fixed, filter) = rest.split_at_checked(FIXED_LEN).ok_or(Error::Truncated)?;
        check_version(fixed[0])?;
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&fixed[1 + 8 * i..9 + 8 * i]);
            u64::from_le_bytes(w)
        };
        let key = AgingKey {
            filter: AgingBloomFilter::from_bytes(filter)?,
            error_rate: f64::from_bits(word(0)),
            capacity: word(1),
            period_secs: word(2),
            last_rotation_ms: word(3),
        };
        let valid = key.error_rate > 0.0
            && key.error_rate < 1.0
            && (1..=super::MAX_CAPACITY).contains(&key.capacity)
            && key.period_secs <= super::MAX_PERIOD_SECS
            && key.filter.num_generations() >= super::MIN_GENERATIONS;
        if !valid {
            return Err(Error::Corrupt {
                reason: format!(
                    "an aging key with error rate {}, capacity {}, period {} s and {} \
                     generations, where (0, 1), 1 to {}, 0 to {} s and at least {} are expected",
                    key.error_rate,
                    key.capacity,
                    key.period_secs,
                    key.filter.num_generations(),
                    super::MAX_CAPACITY,
                    super::MAX_PERIOD_SECS,
                    super::MIN_GENERATIONS
                ),
            });
        }
        Ok(key)
    }
}

/// Refuses an encoding of another version than this build's.
fn check_version(version: u8) -> bloomkit::Result<()> {
    if version == VERSION {
        return Ok(());
    }
    Err(Error::Corrupt {
        reason: format!(
            "an aging key's encoding of version {version}, where this build reads version \
             {VERSION}: load it with the build that wrote it"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(period_secs: u64, last_rotation_ms: u64) -> AgingKey {
        AgingKey {
            filter: AgingBloomFilter::builder(100, 0.01)
                .generations(3)
                .build()
                .unwrap(),
            error_rate: 0.01,
            capacity: 100,
            period_secs,
            last_rotation_ms,
        }
    }

    #[test]
    fn the_encoding_round_trips_and_refuses_damage() {
        let mut k = key(60, 1_700_000_000_000);
        k.filter.insert("a");
        k.filter.rotate();
        k.filter.insert("b");
        let mut bytes = Vec::new();
        k.write_to(&mut bytes).unwrap();
        assert_eq!(bytes.len(), k.encoded_len());
        assert_eq!(AgingKey::from_bytes(&bytes).unwrap(), k);
        let mut other_version = bytes.clone();
        other_version[8] = 2;
        assert!(matches!(
            AgingKey::from_bytes(&other_version),
            Err(Error::Corrupt { .. })
        ));
        let mut bad_rate = bytes.clone();
        bad_rate[9..17].copy_from_slice(&2.0f64.to_bits().to_le_bytes());
        assert!(AgingKey::from_bytes(&bad_rate).is_err());
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert!(
            AgingKey::from_bytes(&bytes).is_err(),
            "the filter's checksum"
        );
        assert!(AgingKey::from_bytes(&bytes[..20]).is_err());
    }

    #[test]
    fn rotations_fall_due_on_the_schedule() {
        assert_eq!(key(0, 0).due_rotation(u64::MAX), None);
        let k = key(10, 1_000);
        assert_eq!(k.due_rotation(10_999), None);
        assert_eq!(k.due_rotation(11_000), Some(11_000));
        assert_eq!(k.due_rotation(25_000), Some(11_000));
        // Five periods late with three generations: the last three of them are run.
        assert_eq!(k.due_rotation(51_000), Some(31_000));
        assert_eq!(
            k.due_rotation(500),
            None,
            "a clock behind the last rotation"
        );
        assert_eq!(k.ms_to_next_rotation(4_000), Some(7_000));
        assert_eq!(k.ms_to_next_rotation(40_000), Some(0));
        assert_eq!(key(0, 0).ms_to_next_rotation(1), None);
    }
}
