//! bloomkit's targets beside its peers, for each kind that has one, checked against a run.
//!
//! * Blocked query, present and absent keys: at least 1.5× faster than fastbloom's fastest
//!   configuration, measuring at most 1.1% false positives, with at most 1.1× fastbloom's
//!   memory per key.
//! * Insert: at least 1.5× faster than fastbloom. The sector filter (`SectorBloomFilter`,
//!   the blocked layout with one bit in each word of the line) is checked against every
//!   speed target, the rate and the memory too: it is the layout meant for fast inserts, and
//!   a user who wants the fastest single-key filter chooses between the two.
//!
//! * Binary fuse, 8- and 16-bit: bloomkit's `BinaryFuseFilter` beside xorf's `BinaryFuse8`
//!   and `BinaryFuse16` given the same hash (`bloomkit::hash`): queries no slower, a build at
//!   most 1.2× xorf's time per key, the same bits per key, and the rate 2^-bits.
//!
//! * Ribbon: bloomkit's `RibbonFilter` beside xorf's `BinaryFuse8` given the same hash:
//!   queries at most 1.5× its time, fewer bits per key, within 8% of the lower bound
//!   log2(1/2^-r) = r, and a measured rate of 2^-r (plus at most 1% of it).
//!
//! "Fastest configuration" is taken strictly: for each figure, the fastest of the fastbloom
//! `BloomFilter` rows (foldhash, its default SipHash, and bloomkit's hash through
//! `insert_hash`/`contains_hash`), so a target is never met against a slow configuration.

use crate::measure::{Outcome, Row};
use crate::report::{markdown_table, percent, times};

/// The speed-up the targets ask for.
pub const SPEEDUP: f64 = 1.5;
/// The highest false-positive rate the blocked filter may measure.
pub const MAX_FP_RATE: f64 = 0.011;
/// The most memory per key the blocked filter may take, relative to fastbloom's.
pub const MAX_MEMORY_RATIO: f64 = 1.1;

/// One target checked in one table.
#[derive(Clone, Debug)]
pub struct Check {
    /// Where: regime and key type.
    pub table: String,
    /// What.
    pub target: String,
    /// bloomkit's figure.
    pub ours: String,
    /// fastbloom's figure, and which configuration.
    pub theirs: String,
    /// The ratio or comparison, as shown.
    pub ratio: String,
    /// Whether it is met.
    pub met: bool,
}

/// The most time per key a bloomkit binary fuse build may take, relative to xorf's.
pub const FUSE_MAX_BUILD_RATIO: f64 = 1.2;

/// The most time a ribbon query may take, relative to xorf's `BinaryFuse8`.
pub const RIBBON_MAX_QUERY_RATIO: f64 = 1.5;
/// The most bits per key a ribbon filter may take, relative to the lower bound.
pub const RIBBON_MAX_SPACE_RATIO: f64 = 1.08;
/// The most a ribbon filter's rate may exceed 2^-r by, relative to it (layout 2: absent
/// rows that are combinations of built ones).
pub const RIBBON_MAX_EXCESS: f64 = 0.01;

/// One of a row's times.
type Figure = fn(&Row) -> f64;

/// One of a row's times that a row may lack (the pre-hashed query).
type MaybeFigure = fn(&Row) -> Option<f64>;

/// bloomkit's row named `name`.
fn ours_named<'a>(outcomes: &'a [Outcome], name: &str) -> Option<&'a Row> {
    outcomes
        .iter()
        .filter_map(Outcome::row)
        .find(|r| r.info.is_bloomkit() && r.info.name == name)
}

/// The fastbloom `BloomFilter` row fastest by `figure`.
fn fastest_fastbloom(outcomes: &[Outcome], figure: Figure) -> Option<&Row> {
    outcomes
        .iter()
        .filter_map(Outcome::row)
        .filter(|r| r.info.name == "fastbloom BloomFilter")
        .min_by(|a, b| figure(a).total_cmp(&figure(b)))
}

/// Checks the targets against one table's outcomes (`table` names it), whose filters were
/// built for the rate `fp_rate`.
pub fn check(table: &str, outcomes: &[Outcome], fp_rate: f64) -> Vec<Check> {
    let query_and_insert: [(&str, Figure); 3] = [
        ("query present ≥ 1.5× fastbloom", |r| r.present_ns),
        ("query absent ≥ 1.5× fastbloom", |r| r.absent_ns),
        ("insert ≥ 1.5× fastbloom", |r| r.insert_ns),
    ];
    let sector: [(&str, Figure); 3] = [
        ("sector query present ≥ 1.5× fastbloom", |r| r.present_ns),
        ("sector query absent ≥ 1.5× fastbloom", |r| r.absent_ns),
        ("sector insert ≥ 1.5× fastbloom", |r| r.insert_ns),
    ];
    let mut checks = bloom_checks(
        table,
        outcomes,
        "BlockedBloomFilter",
        "blocked",
        &query_and_insert,
    );
    checks.extend(bloom_checks(
        table,
        outcomes,
        "SectorBloomFilter",
        "sector",
        &sector,
    ));
    checks.extend(fuse_checks(table, outcomes));
    checks.extend(ribbon_checks(table, outcomes, fp_rate));
    checks
}

/// A blocked-layout filter's targets against fastbloom: the `speed` ones, then its rate and
/// memory (`label` names it in them).
fn bloom_checks(
    table: &str,
    outcomes: &[Outcome],
    name: &str,
    label: &str,
    speed: &[(&str, Figure)],
) -> Vec<Check> {
    let Some(ours) = ours_named(outcomes, name) else {
        return Vec::new();
    };
    let mut checks = Vec::new();
    for &(target, figure) in speed {
        if let Some(theirs) = fastest_fastbloom(outcomes, figure) {
            let ratio = figure(theirs) / figure(ours);
            checks.push(Check {
                table: table.to_string(),
                target: target.to_string(),
                ours: format!("{:.1} ns", figure(ours)),
                theirs: format!("{:.1} ns ({})", figure(theirs), theirs.info.hashing.label()),
                ratio: times(ratio),
                met: ratio >= SPEEDUP,
            });
        }
    }
    checks.push(Check {
        table: table.to_string(),
        target: format!("{label} false-positive rate ≤ 1.1%"),
        ours: percent(ours.fp_rate()),
        theirs: fastest_fastbloom(outcomes, |r| r.present_ns)
            .map_or("–".to_string(), |r| percent(r.fp_rate())),
        ratio: "–".to_string(),
        met: ours.fp_rate() <= MAX_FP_RATE,
    });
    if let Some(theirs) = fastest_fastbloom(outcomes, |r| r.present_ns) {
        let ratio = ours.bits_per_key() / theirs.bits_per_key();
        checks.push(Check {
            table: table.to_string(),
            target: format!("{label} memory ≤ 1.1× fastbloom's (bits/key)"),
            ours: format!("{:.2} bits/key", ours.bits_per_key()),
            theirs: format!("{:.2} bits/key", theirs.bits_per_key()),
            ratio: times(ratio),
            met: ratio <= MAX_MEMORY_RATIO,
        });
    }
    checks
}

/// The row named `name`, bloomkit's or a peer's given `bloomkit::hash`.
fn row_named<'a>(outcomes: &'a [Outcome], name: &str) -> Option<&'a Row> {
    outcomes
        .iter()
        .filter_map(Outcome::row)
        .find(|r| r.info.name == name && r.info.hashing == crate::subject::Hashing::Bloomkit)
}

/// The query times a static filter's targets compare, by name.
const QUERY_FIGURES: [(&str, MaybeFigure); 3] = [
    ("query present", |r| Some(r.present_ns)),
    ("query absent", |r| Some(r.absent_ns)),
    ("query absent, pre-hashed", |r| r.absent_hash_ns),
];

/// The binary fuse targets, for each fingerprint width whose two rows are in the table.
fn fuse_checks(table: &str, outcomes: &[Outcome]) -> Vec<Check> {
    let mut checks = Vec::new();
    for bits in [8u32, 16] {
        let (Some(ours), Some(theirs)) = (
            row_named(outcomes, &format!("BinaryFuseFilter, {bits}-bit")),
            row_named(outcomes, &format!("xorf BinaryFuse{bits}")),
        ) else {
            continue;
        };
        let mut push = |target: String, ours_figure: String, theirs_figure: String, ratio, met| {
            checks.push(Check {
                table: table.to_string(),
                target,
                ours: format!("{ours_figure} (fuse{bits})"),
                theirs: format!("{theirs_figure} (BinaryFuse{bits}, bloomkit::hash)"),
                ratio,
                met,
            })
        };
        for (what, figure) in QUERY_FIGURES {
            if let (Some(o), Some(t)) = (figure(ours), figure(theirs)) {
                push(
                    format!("fuse{bits} {what} no slower than xorf"),
                    format!("{o:.1} ns"),
                    format!("{t:.1} ns"),
                    times(t / o),
                    t / o >= 1.0,
                );
            }
        }
        let build = ours.insert_ns / theirs.insert_ns;
        push(
            format!("fuse{bits} build ≤ {FUSE_MAX_BUILD_RATIO}× xorf's time"),
            format!("{:.1} ns/key", ours.insert_ns),
            format!("{:.1} ns/key", theirs.insert_ns),
            format!("{} of xorf's", times(build)),
            build <= FUSE_MAX_BUILD_RATIO,
        );
        // The same sizing rule: equal arrays, so only the structs' few bytes may differ.
        let space = ours.bits_per_key() / theirs.bits_per_key();
        push(
            format!("fuse{bits} bits/key the same as xorf's"),
            format!("{:.3} bits/key", ours.bits_per_key()),
            format!("{:.3} bits/key", theirs.bits_per_key()),
            times(space),
            (space - 1.0).abs() <= 0.005,
        );
        // The rate is 2^-bits; five standard deviations of the measured count allow for the
        // sampling, and nothing a defect would cause.
        let promised = (-f64::from(bits)).exp2();
        let sd = (promised / ours.absent_queries.max(1) as f64).sqrt();
        push(
            format!("fuse{bits} rate 2^-{bits}"),
            percent(ours.fp_rate()),
            percent(theirs.fp_rate()),
            format!("promised {}", percent(promised)),
            (ours.fp_rate() - promised).abs() <= 5.0 * sd,
        );
    }
    checks
}

/// The ribbon targets against xorf's `BinaryFuse8` given the same hash.
fn ribbon_checks(table: &str, outcomes: &[Outcome], fp_rate: f64) -> Vec<Check> {
    let (Some(ours), Some(theirs)) = (
        row_named(outcomes, "RibbonFilter"),
        row_named(outcomes, "xorf BinaryFuse8"),
    ) else {
        return Vec::new();
    };
    let mut checks = Vec::new();
    let mut push = |target: String, ours: String, theirs: String, ratio, met| {
        checks.push(Check {
            table: table.to_string(),
            target,
            ours,
            theirs,
            ratio,
            met,
        })
    };
    for (what, figure) in QUERY_FIGURES {
        if let (Some(o), Some(t)) = (figure(ours), figure(theirs)) {
            push(
                format!("ribbon {what} ≤ {RIBBON_MAX_QUERY_RATIO}× BinaryFuse8's time"),
                format!("{o:.1} ns"),
                format!("{t:.1} ns (BinaryFuse8, bloomkit::hash)"),
                format!("{} of its time", times(o / t)),
                o / t <= RIBBON_MAX_QUERY_RATIO,
            );
        }
    }
    // The ribbon's rate is 2^-r, r = ⌈log2(1/p)⌉, and its lower bound r bits per key.
    let r = (-fp_rate.log2()).ceil().max(1.0);
    let promised = (-r).exp2();
    push(
        "ribbon smaller than BinaryFuse8 (bits/key)".to_string(),
        format!("{:.3} bits/key", ours.bits_per_key()),
        format!("{:.3} bits/key (BinaryFuse8)", theirs.bits_per_key()),
        times(ours.bits_per_key() / theirs.bits_per_key()),
        ours.bits_per_key() < theirs.bits_per_key(),
    );
    push(
        format!("ribbon bits/key ≤ {RIBBON_MAX_SPACE_RATIO}× the bound (r = {r})"),
        format!("{:.3} bits/key", ours.bits_per_key()),
        format!("bound {r} bits/key"),
        times(ours.bits_per_key() / r),
        ours.bits_per_key() <= RIBBON_MAX_SPACE_RATIO * r,
    );
    // Five standard deviations of the measured count allow for the sampling.
    let sd = (promised / ours.absent_queries.max(1) as f64).sqrt();
    push(
        format!(
            "ribbon rate 2^-{r} (+ at most {})",
            percent(RIBBON_MAX_EXCESS)
        ),
        percent(ours.fp_rate()),
        percent(theirs.fp_rate()),
        format!("promised {}", percent(promised)),
        ours.fp_rate() >= promised - 5.0 * sd
            && ours.fp_rate() <= promised * (1.0 + RIBBON_MAX_EXCESS) + 5.0 * sd,
    );
    checks
}

/// The checks as a markdown table.
pub fn table(checks: &[Check]) -> String {
    let rows: Vec<Vec<String>> = checks
        .iter()
        .map(|c| {
            vec![
                c.table.clone(),
                c.target.clone(),
                c.ours.clone(),
                c.theirs.clone(),
                c.ratio.clone(),
                if c.met { "met" } else { "**missed**" }.to_string(),
            ]
        })
        .collect();
    markdown_table(
        &[
            "table",
            "target",
            "bloomkit",
            "peer (fastbloom BloomFilter's fastest, or as named)",
            "ratio",
            "",
        ],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Regime;
    use crate::subject::{Family, Hashing, Info};

    /// A measured row of `n` keys in `bits` bits a key, with these query times and false
    /// positives out of a million absent keys.
    fn row(name: &str, family: Family, bits: f64, query_ns: f64, false_positives: u64) -> Outcome {
        let n = 100_000;
        Outcome::Measured(Row {
            info: Info {
                name: name.to_string(),
                crate_name: "test",
                family,
                hashing: Hashing::Bloomkit,
                note: None,
            },
            regime: Regime::Cache,
            key_type: "int",
            n,
            memory_bytes: (bits * n as f64 / 8.0) as u64,
            insert_ns: 50.0,
            present_ns: query_ns,
            absent_ns: query_ns,
            absent_hash_ns: Some(query_ns),
            false_positives,
            absent_queries: 1_000_000,
            missed_present: 0,
            present_queries: n,
            refused: 0,
        })
    }

    fn ribbon_verdicts(query_ns: f64, bits: f64, false_positives: u64) -> Vec<(String, bool)> {
        let outcomes = [
            row(
                "RibbonFilter",
                Family::Ribbon,
                bits,
                query_ns,
                false_positives,
            ),
            row("xorf BinaryFuse8", Family::Fuse8, 9.02, 10.0, 3900),
        ];
        ribbon_checks("t", &outcomes, 0.01)
            .into_iter()
            .map(|c| (c.target, c.met))
            .collect()
    }

    #[test]
    fn ribbon_targets_follow_the_figures() {
        // 2^-7 of a million is 7,812.5 false positives.
        let good = ribbon_verdicts(14.0, 7.33, 7_890);
        assert_eq!(good.len(), 6);
        assert!(good.iter().all(|(_, met)| *met), "{good:?}");

        let slow = ribbon_verdicts(16.0, 7.33, 7_890);
        let missed: Vec<_> = slow.iter().filter(|(_, met)| !met).collect();
        assert_eq!(missed.len(), 3, "{slow:?}");
        assert!(missed.iter().all(|(t, _)| t.contains("query")));

        // Too big for the bound, and a rate 9% over 2^-7 (five standard deviations of a
        // million queries are 5.7% of it).
        let loose = ribbon_verdicts(14.0, 7.7, 8_500);
        let missed: Vec<_> = loose
            .iter()
            .filter(|(_, met)| !met)
            .map(|(t, _)| t)
            .collect();
        assert_eq!(missed.len(), 2, "{loose:?}");
        assert!(missed[0].contains("bound") && missed[1].contains("rate"));
        // And a rate well under 2^-7 is as wrong as one over it.
        assert!(ribbon_verdicts(14.0, 7.33, 7_000)
            .iter()
            .any(|(_, met)| !met));
    }

    #[test]
    fn no_ribbon_targets_without_both_rows() {
        let outcomes = [row("RibbonFilter", Family::Ribbon, 7.33, 14.0, 7_890)];
        assert!(ribbon_checks("t", &outcomes, 0.01).is_empty());
    }
}
