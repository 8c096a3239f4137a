//! The defaults for keys that commands create implicitly.

/// Defaults for keys that commands create implicitly (`BF.ADD` on a missing key), settable
/// with `CONFIG SET`. Names and values follow RedisBloom's Redis 8 configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Defaults {
    /// `bf-error-rate`: 0.01.
    pub bf_error_rate: f64,
    /// `bf-initial-size`: 100, in [1, 2^30].
    pub bf_initial_size: u64,
    /// `bf-expansion-factor`: 2, in [0, 32768]; 0 means non-scaling.
    pub bf_expansion_factor: u32,
    /// `cf-bucket-size`: 2, in [1, 255].
    pub cf_bucket_size: u32,
    /// `cf-initial-size`: 1024.
    pub cf_initial_size: u64,
    /// `cf-max-iterations`: 20, in [1, 65535].
    pub cf_max_iterations: u32,
    /// `cf-expansion-factor`: 1, in [0, 32768].
    pub cf_expansion_factor: u32,
    /// `cf-max-expansions`: 32.
    pub cf_max_expansions: u32,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            bf_error_rate: 0.01,
            bf_initial_size: 100,
            bf_expansion_factor: 2,
            cf_bucket_size: 2,
            cf_initial_size: 1024,
            cf_max_iterations: 20,
            cf_expansion_factor: 1,
            cf_max_expansions: 32,
        }
    }
}
