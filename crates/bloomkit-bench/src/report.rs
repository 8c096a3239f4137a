//! Markdown output: the figures table and the ratios against bloomkit.

use crate::measure::{Outcome, Row};

/// A markdown table: a header row, a separator, and one line per row. Cells are written as
/// given (a `|` inside a cell is escaped).
///
/// # Examples
///
/// ```
/// let t = bloomkit_bench::report::markdown_table(&["a", "b"], &[vec!["1".into(), "2".into()]]);
/// assert_eq!(t, "| a | b |\n|---|---|\n| 1 | 2 |\n");
/// ```
pub fn markdown_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let line = |cells: &mut dyn Iterator<Item = String>| {
        let cells: Vec<String> = cells.map(|c| c.replace('|', "\\|")).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let mut out = line(&mut headers.iter().map(|h| h.to_string()));
    out.push_str(&format!("|{}\n", "---|".repeat(headers.len())));
    for row in rows {
        out.push_str(&line(&mut row.iter().cloned()));
    }
    out
}

/// Bytes in binary units: `64.0 KiB`, `512.0 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A count with thousands separators: `52,000`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Nanoseconds, to one decimal.
pub fn ns(value: f64) -> String {
    format!("{value:.1}")
}

/// A rate as a percentage, to three decimals.
pub fn percent(rate: f64) -> String {
    format!("{:.3}%", rate * 100.0)
}

/// A ratio: `2.10×`.
pub fn times(ratio: f64) -> String {
    format!("{ratio:.2}×")
}

/// The figures table for one regime and key type.
pub fn figures_table(outcomes: &[Outcome]) -> String {
    let headers = [
        "filter",
        "crate",
        "hash",
        "keys",
        "memory",
        "bits/key",
        "ns/insert",
        "ns/query present",
        "ns/query absent",
        "ns/query absent, pre-hashed",
        "false-positive rate",
        "notes",
    ];
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|outcome| match outcome {
            Outcome::Measured(r) => vec![
                r.info.name.clone(),
                r.info.crate_name.to_string(),
                r.info.hashing.label(),
                count(r.n),
                bytes(r.memory_bytes),
                format!("{:.2}", r.bits_per_key()),
                ns(r.insert_ns),
                ns(r.present_ns),
                ns(r.absent_ns),
                r.absent_hash_ns.map_or("–".to_string(), ns),
                percent(r.fp_rate()),
                row_notes(r),
            ],
            Outcome::Skipped { info, reason } => {
                let mut cells = vec![
                    info.name.clone(),
                    info.crate_name.to_string(),
                    info.hashing.label(),
                ];
                cells.extend(std::iter::repeat_n("–".to_string(), 8));
                cells.push(format!("skipped: {reason}"));
                cells
            }
        })
        .collect();
    markdown_table(&headers, &rows)
}

/// What a row's reader must know: refused keys, false negatives, the contender's note.
fn row_notes(r: &Row) -> String {
    let mut notes = Vec::new();
    if r.refused > 0 {
        notes.push(format!("{} inserts refused (full)", count(r.refused)));
    }
    if r.missed_present > 0 {
        notes.push(format!(
            "FALSE NEGATIVES: {} of {} present keys answered absent",
            count(r.missed_present),
            count(r.present_queries)
        ));
    }
    if let Some(note) = &r.info.note {
        notes.push(note.clone());
    }
    notes.join("; ")
}

/// The bloomkit row a peer is compared with: the first of its family's counterparts that
/// was measured in this table.
pub fn counterpart<'a>(peer: &Row, outcomes: &'a [Outcome]) -> Option<&'a Row> {
    peer.info.family.counterparts().iter().find_map(|family| {
        outcomes
            .iter()
            .filter_map(Outcome::row)
            .find(|r| r.info.is_bloomkit() && r.info.family == *family)
    })
}

/// The ratios table: each peer's time over its bloomkit counterpart's (above 1: bloomkit is
/// faster), with both filters' bits per key and measured rates beside them.
pub fn ratios_table(outcomes: &[Outcome]) -> String {
    let headers = [
        "peer",
        "hash",
        "compared with",
        "insert",
        "query present",
        "query absent",
        "absent, pre-hashed",
        "bits/key (peer / ours)",
        "false-positive rate (peer / ours)",
    ];
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .filter_map(Outcome::row)
        .filter(|r| !r.info.is_bloomkit())
        .map(|peer| match counterpart(peer, outcomes) {
            Some(ours) => vec![
                peer.info.name.clone(),
                peer.info.hashing.label(),
                ours.info.name.clone(),
                times(peer.insert_ns / ours.insert_ns),
                times(peer.present_ns / ours.present_ns),
                times(peer.absent_ns / ours.absent_ns),
                match (peer.absent_hash_ns, ours.absent_hash_ns) {
                    (Some(p), Some(o)) => times(p / o),
                    _ => "–".to_string(),
                },
                format!("{:.2} / {:.2}", peer.bits_per_key(), ours.bits_per_key()),
                format!("{} / {}", percent(peer.fp_rate()), percent(ours.fp_rate())),
            ],
            None => {
                let mut cells = vec![peer.info.name.clone(), peer.info.hashing.label()];
                cells.push("no bloomkit counterpart measured".to_string());
                cells.extend(std::iter::repeat_n("–".to_string(), 6));
                cells
            }
        })
        .collect();
    markdown_table(&headers, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(bytes(65_536), "64.0 KiB");
        assert_eq!(bytes(512 << 20), "512.0 MiB");
        assert_eq!(bytes(12), "12 B");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(999), "999");
        assert_eq!(percent(0.01), "1.000%");
    }
}
