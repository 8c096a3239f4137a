//! The blocked filters' query and insert kernels, portable and AVX2.
//!
//! A query tests k probes in one 512-bit line. The portable kernel
//! ([`probe::probes_set`]) walks the probes one by one: each is a 32-bit multiply, a
//! shift, a load and an AND, and the multiplies form a chain. The AVX2 kernel computes eight
//! probes at once: it multiplies the probe seed by the first eight powers of the multiplier
//! in one instruction, picks each probe's 32-bit word of the line with two permutes and a
//! blend, and tests all eight bits with one shift and one `testz`. Both kernels read the same
//! bits: probe i is bit `(s·C^i mod 2^32) >> 23` of the line (`s` the seed of the probe's
//! parity in the probe key, `probe::BlockedProbes::key`), and on a little-endian machine
//! bit `b` of the line is bit `b mod 32` of its 32-bit word `b / 32` (tests check the two
//! kernels agree on random lines).
//!
//! Inserts have a kernel of their own ([`insert_into_line`]): the AVX2 one builds a key's
//! 512-bit mask in registers and writes the line once, where the portable one sets probe by
//! probe in memory.
//!
//! The AVX2 kernels (`avx2.rs`) are chosen at run time (`crate::cpu`, which asks the CPU
//! once) so one binary runs everywhere; the calls go one way, from the filter through this
//! dispatch to a kernel, and both kernels take their probe values from `probe.rs`.
//!
//! The one-key kernels take a probe key, not the hash, so they do not depend on how a filter
//! derives its probes: its caller computes the key once from the filter's
//! [`BlockedProbes`]. The batched walks take the hashes (which pick the lines) and the
//! derivation, and compute each key as they visit it.

use super::batch::{for_each_line_prefetched, for_each_line_prefetched_mut};
use super::probe::{self, BlockedProbes};
use crate::bits::{Line, LineArray};
#[cfg(all(target_arch = "x86_64", not(miri)))]
use crate::cpu::avx2_in_use;

/// Whether every probe of the probe key `key` is set in `line`: the AVX2 kernel where the CPU
/// has it, the portable one elsewhere.
#[inline]
pub(crate) fn probes_set_in_line(line: &Line, key: u64, num_hashes: u32) -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if avx2_in_use() {
            // SAFETY: `avx2::probes_set` is compiled for AVX2, and we have just checked at
            // run time that this CPU supports AVX2; that is its only requirement.
            #[allow(unsafe_code)]
            return unsafe { super::avx2::probes_set(line, key, num_hashes) };
        }
    }
    probe::probes_set(key, num_hashes, |w| line.0[w])
}

/// Sets every probe of the probe key `key` in `line`; returns whether any bit was new. The AVX2
/// kernel where the CPU has it, the portable one elsewhere; both set the same bits.
///
/// The AVX2 kernel builds the key's whole 512-bit mask in two registers and writes the line
/// once. The portable one sets the probes one by one in memory; when two probes of a key fall
/// in one word (nine keys in ten at k = 6), each read waits for the write before it, and
/// the core, having learnt that these reads depend on earlier writes, holds back the next
/// key's reads as well: inserts then run one after another instead of overlapping.
#[inline]
pub(crate) fn insert_into_line(line: &mut Line, key: u64, num_hashes: u32) -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if avx2_in_use() {
            // SAFETY: `avx2::insert` is compiled for AVX2, and we have just checked at run
            // time that this CPU supports AVX2; that is its only requirement.
            #[allow(unsafe_code)]
            return unsafe { super::avx2::insert(line, key, num_hashes) };
        }
    }
    probe::insert_into(line, key, num_hashes)
}

/// Answers for `hashes` in order, one per slot of `answers` (as many), probing by `probes`: the
/// batched query of an owned blocked filter's `lines`, the walk of `batch.rs` with the kernel
/// chosen once for the batch, and the AVX2 kernel compiled into the walk's loop.
///
/// (Asking at every key which kernel to use, and calling the AVX2 kernel as a function of
/// its own, cost 17 instructions a key of the 85 the batched query took; callgrind, 200,000
/// keys into a 1M-key filter.)
pub(crate) fn contains_many(
    lines: &LineArray,
    hashes: &[u64],
    probes: BlockedProbes,
    num_hashes: u32,
    answers: &mut [bool],
) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if avx2_in_use() {
            // SAFETY: `contains_many_avx2` is compiled for AVX2, and we have just checked at
            // run time that this CPU supports AVX2; that is its only requirement.
            #[allow(unsafe_code)]
            return unsafe { contains_many_avx2(lines, hashes, probes, num_hashes, answers) };
        }
    }
    contains_many_with(lines, hashes, answers, |line, hash| {
        probe::probes_set(probes.key(hash), num_hashes, |w| line.0[w])
    })
}

/// [`contains_many`] with the AVX2 kernel.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx2")]
fn contains_many_avx2(
    lines: &LineArray,
    hashes: &[u64],
    probes: BlockedProbes,
    num_hashes: u32,
    answers: &mut [bool],
) {
    contains_many_with(lines, hashes, answers, |line, hash| {
        super::avx2::probes_set(line, probes.key(hash), num_hashes)
    })
}

/// The walk of [`contains_many`] with the query kernel `probe`.
#[inline(always)]
fn contains_many_with(
    lines: &LineArray,
    hashes: &[u64],
    answers: &mut [bool],
    probe: impl Fn(&Line, u64) -> bool,
) {
    let mut slots = answers.iter_mut();
    for_each_line_prefetched(
        lines,
        hashes,
        #[inline(always)]
        |line, hash| {
            if let Some(slot) = slots.next() {
                *slot = probe(line, hash);
            }
        },
    );
}

/// Inserts `hashes` in order into an owned blocked filter's `lines`, probing by `probes`; returns
/// how many changed it. The walk of `batch.rs` with the insert kernel chosen once for the batch, as
/// [`contains_many`] does for queries.
pub(crate) fn insert_many(
    lines: &mut LineArray,
    hashes: &[u64],
    probes: BlockedProbes,
    num_hashes: u32,
) -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if avx2_in_use() {
            // SAFETY: `insert_many_avx2` is compiled for AVX2, and we have just checked at
            // run time that this CPU supports AVX2; that is its only requirement.
            #[allow(unsafe_code)]
            return unsafe { insert_many_avx2(lines, hashes, probes, num_hashes) };
        }
    }
    insert_many_with(lines, hashes, |line, hash| {
        probe::insert_into(line, probes.key(hash), num_hashes)
    })
}

/// [`insert_many`] with the AVX2 kernel.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx2")]
fn insert_many_avx2(
    lines: &mut LineArray,
    hashes: &[u64],
    probes: BlockedProbes,
    num_hashes: u32,
) -> u64 {
    insert_many_with(lines, hashes, |line, hash| {
        super::avx2::insert(line, probes.key(hash), num_hashes)
    })
}

/// The walk of [`insert_many`] with the insert kernel `insert`.
#[inline(always)]
fn insert_many_with(
    lines: &mut LineArray,
    hashes: &[u64],
    insert: impl Fn(&mut Line, u64) -> bool,
) -> u64 {
    let mut changed = 0u64;
    for_each_line_prefetched_mut(
        lines,
        hashes,
        #[inline(always)]
        |line, hash| changed += insert(line, hash) as u64,
    );
    changed
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// splitmix64 from `state`: a fixed sequence, so a failure reproduces.
    pub(crate) fn splitmix(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    /// A random line: each word the AND of `density` random words, so higher densities are
    /// sparser; density 0 is all ones, 8 all zeros.
    pub(crate) fn random_line(density: u32, next: &mut impl FnMut() -> u64) -> Line {
        let mut line = Line::default();
        for word in &mut line.0 {
            *word = match density {
                0 => u64::MAX,
                8 => 0,
                d => (0..d).fold(u64::MAX, |acc, _| acc & next()),
            };
        }
        line
    }

    /// The derivation the `i`th key of a test probes by: both, in turn.
    fn probes_of(i: usize) -> BlockedProbes {
        [BlockedProbes::OneSeed, BlockedProbes::TwoSeeds][i % 2]
    }

    /// The AVX2 query kernel itself, not the dispatch (which a benchmark may have switched to
    /// the portable one): `None` where it cannot run.
    fn avx2_query(line: &Line, hash: u64, k: u32) -> Option<bool> {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if crate::cpu::has_avx2() {
            // SAFETY: the kernel needs AVX2 and nothing else; the CPU has just said it has it.
            #[allow(unsafe_code)]
            return Some(unsafe { super::super::avx2::probes_set(line, hash, k) });
        }
        let _ = (line, hash, k);
        None
    }

    /// The AVX2 insert kernel itself: `None` where it cannot run.
    fn avx2_insert(line: &mut Line, hash: u64, k: u32) -> Option<bool> {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if crate::cpu::has_avx2() {
            // SAFETY: as in `avx2_query`.
            #[allow(unsafe_code)]
            return Some(unsafe { super::super::avx2::insert(line, hash, k) });
        }
        let _ = (line, hash, k);
        None
    }

    /// Both kernels give the same answer for every probe count and both derivations' probe keys, on
    /// lines of every density, including the all-zero and all-one lines. Each kernel is called
    /// directly; the AVX2 one where the CPU has it (a run with `BLOOMKIT_REQUIRE_AVX2` set fails
    /// without it).
    #[test]
    fn kernels_agree() {
        let mut next = splitmix(0x1234_5678_9abc_def0);
        let avx2 = crate::cpu::avx2_for_test("kernels_agree");
        let mut checked = 0u64;
        for density in [0u32, 1, 2, 3, 4, 6, 8] {
            for _ in 0..200 {
                let line = random_line(density, &mut next);
                for k in [1u32, 2, 5, 6, 7, 8, 9, 15, 16, 17, 33, 64] {
                    for i in 0..20 {
                        let hash = probes_of(i).key(next());
                        let portable = probe::probes_set(hash, k, |w| line.0[w]);
                        if avx2 {
                            assert_eq!(avx2_query(&line, hash, k), Some(portable), "k={k}");
                        }
                        assert_eq!(probes_set_in_line(&line, hash, k), portable, "k={k}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 100_000);
        eprintln!("kernels agree on {checked} queries (AVX2 kernel checked: {avx2})");
    }

    /// Both insert kernels set the same bits and report a change the same way, for every probe
    /// count and both derivations' probe keys, into lines of every density (so some inserts change
    /// nothing).
    #[test]
    fn insert_kernels_agree() {
        let mut next = splitmix(0x0f0e_0d0c_0b0a_0908);
        let avx2 = crate::cpu::avx2_for_test("insert_kernels_agree");
        let (mut checked, mut unchanged) = (0u64, 0u64);
        for density in [0u32, 1, 2, 4, 8] {
            for _ in 0..100 {
                let start = random_line(density, &mut next);
                for k in [1u32, 2, 5, 6, 7, 8, 9, 15, 16, 17, 33, 64] {
                    for i in 0..10 {
                        let hash = probes_of(i).key(next());
                        let mut portable = start;
                        let changed = probe::insert_into(&mut portable, hash, k);
                        if avx2 {
                            let mut direct = start;
                            assert_eq!(avx2_insert(&mut direct, hash, k), Some(changed), "k={k}");
                            assert_eq!(direct.0, portable.0, "k={k}");
                        }
                        let mut chosen = start;
                        assert_eq!(insert_into_line(&mut chosen, hash, k), changed, "k={k}");
                        assert_eq!(chosen.0, portable.0, "k={k}");
                        // The bits set are the key's probes, and nothing else.
                        let mask = probe::line_mask(hash, k);
                        let expected: Vec<u64> =
                            start.0.iter().zip(mask).map(|(s, m)| s | m).collect();
                        assert_eq!(chosen.0[..], expected[..], "k={k}");
                        checked += 1;
                        unchanged += u64::from(!changed);
                    }
                }
            }
        }
        assert!(
            unchanged > 1000 && unchanged < checked,
            "{unchanged} of {checked}"
        );
        eprintln!("insert kernels agree on {checked} inserts (AVX2 kernel checked: {avx2})");
    }

    /// The batched query and insert give the answers, counts and lines of the one-key kernels, for
    /// both derivations, with each kernel (the AVX2 one called directly where the CPU has it), for
    /// a filter walked without prefetching and one walked with it.
    #[test]
    fn batched_kernels_agree_with_one_key() {
        let mut next = splitmix(0x005e_ed0f_ba7c_4e55);
        let avx2 = crate::cpu::avx2_for_test("batched_kernels_agree_with_one_key");
        // Only an x86-64 build outside Miri calls the AVX2 kernels.
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        let _ = avx2;
        let (mut yes, mut no) = (0usize, 0usize);
        let large = crate::batch::PREFETCH_FROM_BYTES / super::super::batch::LINE_BYTES + 5;
        for num_lines in [3usize, 1000, large] {
            let lines: Vec<Line> = (0..num_lines).map(|_| random_line(2, &mut next)).collect();
            let start = LineArray::from_lines(lines);
            let hashes: Vec<u64> = (0..3000).map(|_| next()).collect();
            let line_of = |h: u64| probe::line_index(h, num_lines);
            for (k, p) in [1u32, 6, 7, 9, 17]
                .into_iter()
                .flat_map(|k| [(k, BlockedProbes::OneSeed), (k, BlockedProbes::TwoSeeds)])
            {
                let want: Vec<bool> = hashes
                    .iter()
                    .map(|&h| probe::probes_set(p.key(h), k, |w| start.line(line_of(h)).0[w]))
                    .collect();
                yes += want.iter().filter(|&&a| a).count();
                no += want.iter().filter(|&&a| !a).count();
                let mut got = vec![false; hashes.len()];
                contains_many(&start, &hashes, p, k, &mut got);
                assert_eq!(got, want, "{num_lines} lines, k={k}");
                let mut got = vec![false; hashes.len()];
                contains_many_with(&start, &hashes, &mut got, |line, h| {
                    probe::probes_set(p.key(h), k, |w| line.0[w])
                });
                assert_eq!(got, want, "portable, {num_lines} lines, k={k}");

                let mut one = start.clone();
                let changed: u64 = hashes
                    .iter()
                    .map(|&h| u64::from(probe::insert_into(one.line_mut(line_of(h)), p.key(h), k)))
                    .sum();
                let mut many = start.clone();
                assert_eq!(insert_many(&mut many, &hashes, p, k), changed);
                assert!(many == one, "{num_lines} lines, k={k}");
                let mut many = start.clone();
                let portable = insert_many_with(&mut many, &hashes, |l, h| {
                    probe::insert_into(l, p.key(h), k)
                });
                assert_eq!(portable, changed);
                assert!(many == one, "portable, {num_lines} lines, k={k}");
                #[cfg(all(target_arch = "x86_64", not(miri)))]
                if avx2 {
                    let mut got = vec![false; hashes.len()];
                    let mut many = start.clone();
                    // SAFETY: the CPU has AVX2, the kernels' only requirement.
                    #[allow(unsafe_code)]
                    let inserted = unsafe {
                        contains_many_avx2(&start, &hashes, p, k, &mut got);
                        insert_many_avx2(&mut many, &hashes, p, k)
                    };
                    assert_eq!(got, want, "AVX2, {num_lines} lines, k={k}");
                    assert_eq!(inserted, changed);
                    assert!(many == one, "AVX2, {num_lines} lines, k={k}");
                }
                // Every key inserted is found.
                let mut after = vec![false; hashes.len()];
                contains_many(&many, &hashes, p, k, &mut after);
                assert!(after.iter().all(|&a| a), "{num_lines} lines, k={k}");
            }
        }
        assert!(yes > 1000 && no > 1000, "{yes} yes, {no} no");
    }

    /// A line holding exactly a key's probes answers yes; clearing any one of them, no: for
    /// both derivations' probe keys.
    #[test]
    fn each_probe_matters() {
        let hashes = [1u64, 0xdead_beef, u64::MAX, 0x0123_4567_89ab_cdef];
        for hash in (0..8).map(|i| probes_of(i).key(hashes[i / 2])) {
            for k in [1u32, 6, 8, 9, 20] {
                let mask = probe::line_mask(hash, k);
                let line = Line(mask);
                assert!(probes_set_in_line(&line, hash, k));
                assert_ne!(avx2_query(&line, hash, k), Some(false));
                for (w, &word) in mask.iter().enumerate() {
                    let mut bits = word;
                    while bits != 0 {
                        let low = bits & bits.wrapping_neg();
                        let mut cleared = line;
                        cleared.0[w] &= !low;
                        assert!(!probes_set_in_line(&cleared, hash, k), "k={k}");
                        assert_ne!(avx2_query(&cleared, hash, k), Some(true), "k={k}");
                        bits &= !low;
                    }
                }
            }
        }
    }
}
