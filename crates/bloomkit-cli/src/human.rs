//! Numbers for people: byte sizes, counts with separators, percentages, durations per item.

use std::time::Duration;

/// Bytes in binary units, three significant figures past 1 KiB: `512 B`, `1.14 MiB`.
pub fn bytes(n: u64) -> String {
    if n < 1024 {
        return format!("{n} B");
    }
    bytes_f64(n as f64)
}

/// [`bytes()`] of an amount too large for a `u64` (a filter no machine could hold), up to
/// YiB; three significant figures.
pub fn bytes_f64(n: f64) -> String {
    const UNITS: [&str; 8] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
    if n < 1024.0 {
        return format!("{n:.0} B");
    }
    let mut value = n / 1024.0;
    let mut unit = 0;
    // Values past 100 show no decimals, so anything that would print as 1024 moves up.
    while value >= 1023.5 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let decimals = match round3(value) {
        v if v < 10.0 => 2,
        v if v < 100.0 => 1,
        _ => 0,
    };
    format!("{value:.decimals$} {}", UNITS[unit])
}

/// `x` rounded to three significant figures.
fn round3(x: f64) -> f64 {
    format!("{x:.2e}").parse().unwrap_or(x)
}

/// An integer with thousands separators: `9,585,088`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count and a noun: `1 key`, `2 keys`, `1,000 keys`.
pub fn count_of(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// "a" or "an", for a word in a sentence: `an aging filter`, `a cuckoo filter`.
pub fn article(word: &str) -> &'static str {
    match word.as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    }
}

/// A fraction as a percentage with a fixed number of decimals: `percent(0.01, 3)` is
/// `1.000%`.
pub fn percent(fraction: f64, decimals: usize) -> String {
    format!("{:.decimals$}%", fraction * 100.0)
}

/// A fraction as a percentage with three significant figures (`45.1%`, `0.955%`,
/// `0.00123%`), for rates that span many orders of magnitude; tiny ones in exponent form.
pub fn percent_sig(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p == 0.0 || !p.is_finite() {
        return format!("{p}%");
    }
    if p < 1e-4 {
        return format!("{p:.2e}%");
    }
    // Decimals that leave three significant figures, counted after rounding, so that
    // 0.99996 shows as 1.00 and not 1.000.
    let decimals = (2 - round3(p).log10().floor() as i64).max(0) as usize;
    format!("{p:.decimals$}%")
}

/// Nanoseconds per item of a run over `items` items, one decimal: `23.4`.
pub fn ns_per(elapsed: Duration, items: u64) -> String {
    format!("{:.1}", elapsed.as_nanos() as f64 / items.max(1) as f64)
}

/// A plain-text table: the first column left-aligned (names), the rest right-aligned
/// (numbers), columns two spaces apart, every line ending in a newline.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if i == 0 {
                line.push_str(&format!("{cell:<width$}"));
            } else {
                line.push_str(&format!("  {cell:>width$}"));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.00 KiB");
        assert_eq!(bytes(1_198_136), "1.14 MiB");
        assert_eq!(bytes(250 << 20), "250 MiB");
        assert_eq!(bytes(u64::MAX), "16.0 EiB");
        assert_eq!(bytes(1024 * 1024 - 1), "1.00 MiB");
        assert_eq!(bytes(10 * 1024 - 1), "10.0 KiB");
        assert_eq!(bytes_f64(2f64.powi(70)), "1.00 ZiB");
        assert_eq!(bytes_f64(2.2e19), "19.1 EiB");
    }

    #[test]
    fn articles() {
        assert_eq!(article("aging"), "an");
        assert_eq!(article("cuckoo"), "a");
        assert_eq!(article(""), "a");
    }

    #[test]
    fn counts() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(9_585_088), "9,585,088");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn percentages() {
        assert_eq!(percent(0.01, 3), "1.000%");
        assert_eq!(percent_sig(0.451), "45.1%");
        assert_eq!(percent_sig(0.00955), "0.955%");
        assert_eq!(percent_sig(0.0000123), "0.00123%");
        assert_eq!(percent_sig(1.0), "100%");
        assert_eq!(percent_sig(0.0), "0%");
        assert_eq!(percent_sig(1e-12), "1.00e-10%");
        // Rounding up to the next power of ten keeps three figures.
        assert_eq!(percent_sig(0.0099996), "1.00%");
        assert_eq!(percent_sig(0.00099999), "0.100%");
        assert_eq!(percent_sig(0.099996), "10.0%");
    }

    #[test]
    fn tables_align() {
        let t = table(
            &["kind", "bits"],
            &[
                vec!["classic".into(), "9,585,088".into()],
                vec!["x".into(), "1".into()],
            ],
        );
        assert_eq!(
            t,
            "kind          bits\nclassic  9,585,088\nx                1\n"
        );
    }

    #[test]
    fn per_item_times() {
        assert_eq!(ns_per(Duration::from_millis(25), 1_000_000), "25.0");
        assert_eq!(ns_per(Duration::ZERO, 0), "0.0");
    }
}
