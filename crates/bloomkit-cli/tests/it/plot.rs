//! `bloomkit plot`: real charts from real builds, and clear refusals.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

fn bloomkit() -> Command {
    Command::cargo_bin("bloomkit").unwrap()
}

/// Whether a font for the chart's text can be found here; the charts need one. scripts/test.sh
/// installs one (fonts-dejavu-core), so there a missing font is a failure, not a skip.
fn font_available(dir: &Path) -> bool {
    // `--probes` is the old spelling of `--absent-keys`, kept working (and out of the help).
    let probe = bloomkit()
        .args(["plot", "blocked", "--items", "10", "--probes", "10", "-o"])
        .arg(dir.join("probe.svg"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&probe.stderr);
    bloomkit_testkit::skip::holds(
        !err.contains("no font found"),
        "a font for the chart's text (Debian's fonts-dejavu-core)",
    )
}

#[test]
fn draws_an_svg_of_rate_against_bits_per_key() {
    let dir = tempfile::tempdir().unwrap();
    if !font_available(dir.path()) {
        return;
    }
    let out = dir.path().join("rates.svg");
    let assert = bloomkit()
        .args([
            "plot",
            "blocked",
            "ribbon",
            "blocked",
            "--items",
            "5k",
            "--absent-keys",
            "50,000",
            "-o",
        ])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("wrote {}", out.display())));
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    // One row per build: 11 target rates for each kind, each named once.
    let rows = |kind: &str| stdout.lines().filter(|l| l.starts_with(kind)).count();
    assert_eq!((rows("blocked"), rows("ribbon")), (11, 11), "{stdout}");
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.starts_with("<svg"), "{:.100}", svg);
    for text in [
        "50,000 absent keys asked per point",
        "bits per key",
        "blocked",
        "ribbon",
        "False-positive rate against bits per key",
    ] {
        assert!(svg.contains(text), "the chart lacks {text:?}");
    }
    // The blocked filter at a 1% target measures about 1% over 50,000 absent keys.
    let one = stdout
        .lines()
        .find(|l| l.starts_with("blocked") && l.contains(" 1.00% "))
        .unwrap_or_else(|| panic!("no 1% row:\n{stdout}"));
    let measured: f64 = one
        .split_whitespace()
        .nth(5)
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!((0.7..1.3).contains(&measured), "{one}");
}

#[test]
fn draws_a_png_of_rate_against_fill() {
    let dir = tempfile::tempdir().unwrap();
    if !font_available(dir.path()) {
        return;
    }
    let out = dir.path().join("fill.png");
    bloomkit()
        .args([
            "plot",
            "--fill",
            "classic",
            "ribbon",
            "--items",
            "5000",
            "--absent-keys",
            "2e4",
            "-o",
        ])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("ribbon left out"));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&out).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (1000, 640));
    // Drawn on: more than the white background and a few lines.
    let inked = pixels
        .chunks(3)
        .filter(|p| p.iter().any(|&c| c < 200))
        .count();
    assert!(inked > 5_000, "{inked} dark pixels");
}

#[test]
fn refuses_what_it_cannot_draw() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chart.pdf");
    bloomkit()
        .args(["plot", "blocked", "-o"])
        .arg(&out)
        .assert()
        .failure()
        .stderr(predicate::str::contains("name the file .svg or .png"));
    bloomkit()
        .args(["plot", "bloom", "-o", "x.svg"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("possible values"));
    bloomkit()
        .args(["plot", "--fill", "ribbon", "-o"])
        .arg(dir.path().join("r.svg"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("cannot be overfilled"));
    bloomkit()
        .args(["plot", "--fill", "blocked", "--fp-rate", "2", "-o"])
        .arg(dir.path().join("r.svg"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("strictly between 0 and 1"));
    bloomkit()
        .env("BLOOMKIT_FONT", dir.path().join("no-such-font.ttf"))
        .args(["plot", "blocked", "-o"])
        .arg(dir.path().join("r.svg"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("BLOOMKIT_FONT"));
    assert!(!dir.path().join("r.svg").exists());
}

/// `--absent-keys` counts keys never added; `--probes`, its old spelling, still works, and
/// the help shows only the new one, since "probes" means hash probes everywhere else.
#[test]
fn absent_keys_is_the_flag_and_probes_its_hidden_old_spelling() {
    let help = bloomkit().args(["plot", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    assert!(help.contains("--absent-keys <N>"), "{help}");
    assert!(!help.contains("--probes"), "{help}");
    for flag in ["--absent-keys", "--probes"] {
        let out = bloomkit()
            .args(["plot", "blocked", "--items", "10", flag, "0", "-o", "x.svg"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("0 is outside 1 to 1,000,000,000"),
            "{flag}: {err}"
        );
    }
}
