//! The limits RedisBloom puts on the filter commands' arguments, and those of bloomkit's own
//! `AF.*` commands, written once: the commands check their arguments against them, and the
//! `bf-*`/`cf-*`/`af-*` parameters' ranges end at them.

/// The largest capacity of a Bloom filter (`BF.RESERVE`, `BF.INSERT CAPACITY`,
/// `bf-initial-size`).
pub(crate) const BF_MAX_CAPACITY: i64 = 1 << 30;
/// The largest `EXPANSION` of a Bloom filter (and `bf-expansion-factor`).
pub(crate) const BF_MAX_EXPANSION: i64 = 32_768;
/// The largest capacity of a cuckoo filter (`CF.RESERVE`, `CF.INSERT CAPACITY`,
/// `cf-initial-size`).
pub(crate) const CF_MAX_CAPACITY: i64 = 1 << 30;
/// The largest `BUCKETSIZE` (and `cf-bucket-size`): a capacity of at least twice it is valid
/// whatever the configuration.
pub(crate) const CF_MAX_BUCKET_SIZE: i64 = 255;
/// The largest `MAXITERATIONS` (and `cf-max-iterations`).
pub(crate) const CF_MAX_ITERATIONS: i64 = 65_535;
/// The largest `EXPANSION` of a cuckoo filter (and `cf-expansion-factor`).
pub(crate) const CF_MAX_EXPANSION: i64 = 32_768;
/// RedisBloom's hard limit on a cuckoo filter's sub-filters (`UINT16_MAX`), and
/// `cf-max-expansions`'s.
pub(crate) const CF_MAX_SUB_FILTERS: u32 = 65_535;

/// The most items per generation `AF.RESERVE` accepts, as for `BF.RESERVE`.
pub(crate) const AF_MAX_CAPACITY: u64 = BF_MAX_CAPACITY as u64;
/// The fewest generations of an aging key: with one, a rotation would forget everything at
/// once.
pub(crate) const AF_MIN_GENERATIONS: u32 = 2;
/// The most generations of an aging key: the library's limit.
pub(crate) const AF_MAX_GENERATIONS: u32 = 64;
/// The longest `PERIOD` of an aging key: ten years of seconds.
pub(crate) const AF_MAX_PERIOD_SECS: u64 = 10 * 365 * 24 * 3600;
