//! What the bit-array kinds' builders share: the plan's inputs, the settings that override
//! it, and the setters, written once ([`bits_builder!`]).
//!
//! Every kind is configured the same way: `Kind::new(items, fp_rate)` builds the planned
//! filter, and `Kind::builder(items, fp_rate)` starts from that plan and lets any setting be
//! changed before `build`. For the bit-array kinds (classic, blocked, atomic, counting,
//! aging) the settings are the seed, the number of bits and the number of probes; whatever
//! is not set comes from the plan.

use crate::error::Result;
use crate::hash::DEFAULT_SEED;
use crate::sizing::{self, Plan};

/// A bit-array filter's plan inputs and overrides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BitsPlan {
    pub(crate) items: u64,
    pub(crate) fp_rate: f64,
    pub(crate) seed: u64,
    pub(crate) num_bits: Option<u64>,
    pub(crate) num_hashes: Option<u32>,
}

impl BitsPlan {
    pub(crate) fn new(items: u64, fp_rate: f64) -> Self {
        BitsPlan {
            items,
            fp_rate,
            seed: DEFAULT_SEED,
            num_bits: None,
            num_hashes: None,
        }
    }

    /// The bits and probes to build: those set, and the plan's for the rest. The rate is
    /// checked even when both are set, so a builder never accepts a setting it then ignores.
    /// Bits set alone get the probe count best for `items` keys in them (`best_hashes`), not
    /// the count planned for other bits.
    pub(crate) fn resolve(
        &self,
        plan: fn(u64, f64) -> Result<Plan>,
        best_hashes: fn(u64, u64) -> u32,
    ) -> Result<(u64, u32)> {
        self.resolve_with(plan, best_hashes)
    }

    /// [`resolve`](Self::resolve) with a plan that depends on the builder's other settings
    /// (a classic filter's probe derivation).
    pub(crate) fn resolve_with(
        &self,
        plan: impl Fn(u64, f64) -> Result<Plan>,
        best_hashes: fn(u64, u64) -> u32,
    ) -> Result<(u64, u32)> {
        sizing::check_fp_rate(self.fp_rate)?;
        match (self.num_bits, self.num_hashes) {
            (Some(bits), Some(hashes)) => Ok((bits, hashes)),
            // Zero bits is refused by the constructor; no probe count is worth computing.
            (Some(0), None) => Ok((0, 1)),
            (Some(bits), None) => Ok((bits, best_hashes(self.items, bits))),
            (None, hashes) => {
                let plan = plan(self.items, self.fp_rate)?;
                Ok((plan.num_bits, hashes.unwrap_or(plan.num_hashes)))
            }
        }
    }
}

/// Defines a bit-array kind's builder: the struct, its `Debug`/`Clone`/`PartialEq`, and the
/// setters every such kind has (`seed`, the bits under the name given, `num_hashes`). The
/// kind writes its own `build` (and any setters of its own) in a second `impl` block.
///
/// `$kind` is the filter type, `$bits` the setter's name for its bits (`num_bits`, or
/// `num_counters` for a counting filter) and `$bits_doc` what they are, for the docs;
/// `$extra` adds fields of the kind's own, with their defaults.
macro_rules! bits_builder {
    (
        $(#[$meta:meta])*
        $name:ident for $kind:ident,
        $bits:ident: $bits_doc:literal
        $(, $extra:ident: $extra_ty:ty = $extra_default:expr)* $(,)?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        #[must_use = "a builder does nothing until `build` is called"]
        pub struct $name {
            plan: $crate::builder::BitsPlan,
            $($extra: $extra_ty,)*
        }

        impl $name {
            pub(crate) fn new(items: u64, fp_rate: f64) -> Self {
                $name {
                    plan: $crate::builder::BitsPlan::new(items, fp_rate),
                    $($extra: $extra_default,)*
                }
            }

            #[doc = concat!("Hash keys with `seed` instead of [`DEFAULT_SEED`](crate::DEFAULT_SEED) \
                (probe by hash with [`hash_with_seed`](crate::hash_with_seed) and the same \
                seed, or with the filter's [`key_hasher`](", stringify!($kind), "::key_hasher)).")]
            pub fn seed(mut self, seed: u64) -> Self {
                self.plan.seed = seed;
                self
            }

            #[doc = concat!("Exactly `", stringify!($bits), "` ", $bits_doc, " instead of the \
                planned number (rounded up as the filter rounds them). Unless \
                [`num_hashes`](Self::num_hashes) is set too, the probes are then the count \
                best for the planned keys in these ", $bits_doc, ".")]
            pub fn $bits(mut self, $bits: u64) -> Self {
                self.plan.num_bits = Some($bits);
                self
            }

            /// Exactly `num_hashes` probes per key (1 to [`MAX_NUM_HASHES`](crate::sizing::MAX_NUM_HASHES))
            /// instead of the planned number.
            pub fn num_hashes(mut self, num_hashes: u32) -> Self {
                self.plan.num_hashes = Some(num_hashes);
                self
            }
        }
    };
}
pub(crate) use bits_builder;
