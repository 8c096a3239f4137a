//! `bloomkit plot`: measured false-positive rates beside their predictions, as a chart.
//!
//! Every point is a real build: a filter of the kind, sized by the library for a key count
//! and a target rate, filled with that many distinct keys and probed with keys never added,
//! measured by `bloomkit_lab` (the explorer page's "real filter" panel runs the same code in
//! the browser). Two charts:
//!
//! * the rate against bits per key, one build per target rate from 20% to 0.01%;
//! * with `--fill`, the rate against the keys held per key planned (¼× to 4×) of one filter.
//!
//! Drawn with `plotters`: a maintained, pure-Rust plotting crate with a log-scale axis, a
//! legend and both an SVG and a bitmap backend, so one piece of drawing code writes either
//! format, and nothing needs a C library or a browser. Its default features pull in a system
//! font library (font-kit, through C bindings); instead it is built with `ab_glyph`, a pure-Rust
//! rasteriser that wants the font's bytes, and `fontdb` (also pure Rust) finds a sans-serif
//! font installed on the machine (or `BLOOMKIT_FONT` names one). The bitmap is encoded by
//! `png`, which is all of an image library a PNG needs.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bloomkit_lab::{Experiment, Kind, LabError, Measurement};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{Context, Error, Result};
use crate::{human, output};

/// The target rates of the bits-per-key chart, one build each.
const TARGETS: [f64; 11] = [
    0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001, 5e-4, 2e-4, 1e-4,
];

/// The fills of the `--fill` chart, as keys held per key planned.
const FILLS: [f64; 16] = [
    0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75, 4.0,
];

/// The chart's size in pixels (SVG units for an SVG).
const SIZE: (u32, u32) = (1000, 640);

/// Colours that stay apart for colour-blind readers (Okabe and Ito's palette).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(153, 153, 153),
];

/// What `plot` was asked for.
pub struct Options {
    /// The kinds to draw, each once, in order.
    pub kinds: Vec<Kind>,
    /// Where to write the chart: `.svg` or `.png`.
    pub output: PathBuf,
    /// Keys each filter is planned for and filled with.
    pub items: u64,
    /// Keys never added, asked about per point.
    pub absent_keys: u64,
    /// The rate-against-fill chart instead of the rate-against-bits-per-key one.
    pub fill: bool,
    /// With `fill`, the target rate the filter is planned for.
    pub fp_rate: f64,
}

/// The kinds named (each once, in the order first named); clap has checked the names.
pub fn kinds(names: &[String]) -> Vec<Kind> {
    let mut kinds = Vec::new();
    for kind in names.iter().filter_map(|n| Kind::from_name(n)) {
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

/// The output formats.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Svg,
    Png,
}

/// One kind's points: `(x, measured, predicted)`.
struct Series {
    kind: Kind,
    points: Vec<(f64, Measurement)>,
}

/// Builds and measures every point, prints the figures, and writes the chart.
///
/// # Errors
///
/// An output name that is neither `.svg` nor `.png`, a bad rate or size, no font for the
/// chart's text, or a file that cannot be written.
pub fn run(options: &Options) -> Result<()> {
    let format = match options
        .output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("svg") => Format::Svg,
        Some("png") => Format::Png,
        _ => {
            return Err(Error::Message(format!(
                "cannot tell the chart's format from '{}': name the file .svg or .png",
                options.output.display()
            )))
        }
    };
    if options.fill && !(options.fp_rate > 0.0 && options.fp_rate < 1.0) {
        return Err(Error::Plain(bloomkit::Error::InvalidFpRate {
            fp_rate: options.fp_rate,
        }));
    }
    // Before minutes of building: a chart with no font for its text cannot be drawn.
    register_font()?;

    let mut kinds = options.kinds.clone();
    if options.fill {
        let before = kinds.len();
        kinds.retain(|k| !k.is_static());
        if kinds.len() < before {
            eprintln!("bloomkit: ribbon left out of the --fill chart: a static filter holds exactly the keys it was built from");
        }
        if kinds.is_empty() {
            return Err(Error::Message(
                "nothing to draw with --fill: a ribbon filter cannot be overfilled; choose another kind".to_string(),
            ));
        }
    }
    let series = kinds
        .iter()
        .map(|&kind| {
            if options.fill {
                measure_fill(kind, options.items, options.fp_rate, options.absent_keys)
            } else {
                measure_sizes(kind, options.items, options.absent_keys)
            }
        })
        .collect::<Result<Vec<_>>>()?;

    let chart = Chart::new(options, series);
    let bytes = match format {
        Format::Svg => {
            let mut svg = String::new();
            draw(
                SVGBackend::with_string(&mut svg, SIZE).into_drawing_area(),
                &chart,
            )?;
            svg.into_bytes()
        }
        Format::Png => {
            let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
            draw(
                BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area(),
                &chart,
            )?;
            encode_png(&rgb)?
        }
    };
    std::fs::write(&options.output, bytes)
        .context(|| format!("cannot write the chart '{}'", options.output.display()))?;
    output::print(&format!(
        "{}\nwrote {}\n",
        chart.table(),
        options.output.display()
    ))
}

/// One build per target rate: the rate against bits per key.
fn measure_sizes(kind: Kind, items: u64, absent_keys: u64) -> Result<Series> {
    let mut points = Vec::with_capacity(TARGETS.len());
    for target in TARGETS {
        let mut e = Experiment::new(kind, items, target).map_err(|e| lab_error(kind, e))?;
        e.fill_to(items).map_err(|e| lab_error(kind, e))?;
        let m = checked(
            kind,
            e.measure(absent_keys).map_err(|e| lab_error(kind, e))?,
        )?;
        points.push((m.bits_per_key(), m));
    }
    Ok(Series { kind, points })
}

/// One filter, filled further and further: the rate against keys held per key planned.
fn measure_fill(kind: Kind, items: u64, fp_rate: f64, absent_keys: u64) -> Result<Series> {
    let mut e = Experiment::new(kind, items, fp_rate).map_err(|e| lab_error(kind, e))?;
    let mut points = Vec::with_capacity(FILLS.len());
    for fill in FILLS {
        e.fill_to((items as f64 * fill).round() as u64)
            .map_err(|e| lab_error(kind, e))?;
        let m = checked(
            kind,
            e.measure(absent_keys).map_err(|e| lab_error(kind, e))?,
        )?;
        points.push((m.inserted as f64 / items as f64, m));
        // A full cuckoo filter takes no more keys: its last point is where it filled.
        if e.full_at().is_some() {
            break;
        }
    }
    Ok(Series { kind, points })
}

fn lab_error(kind: Kind, e: LabError) -> Error {
    Error::Message(format!("cannot build the {kind} filter: {e}"))
}

/// A measurement, refused if the filter lost a key it holds (which no correct filter does).
fn checked(kind: Kind, m: Measurement) -> Result<Measurement> {
    if m.false_negatives > 0 {
        return Err(Error::Message(format!(
            "the {kind} filter answered no for {} of the {} keys it holds: a bug in bloomkit; \
             please report it with this command line",
            m.false_negatives, m.inserted
        )));
    }
    Ok(m)
}

/// What the chart shows: its series and its words.
struct Chart {
    series: Vec<Series>,
    fill: bool,
    title: String,
    subtitle: String,
}

impl Chart {
    fn new(options: &Options, series: Vec<Series>) -> Chart {
        let keys = human::count(options.items);
        let absent = human::count(options.absent_keys);
        let (title, subtitle) = if options.fill {
            (
                "False-positive rate of one overfilled filter".to_string(),
                format!(
                    "planned for {keys} keys at {}, filled from ¼× to 4×; {absent} absent keys asked per point; lines: predicted, dots: measured",
                    human::percent_sig(options.fp_rate)
                ),
            )
        } else {
            (
                "False-positive rate against bits per key".to_string(),
                format!(
                    "{keys} keys per filter, one build per target rate from 20% to 0.01%; {absent} absent keys asked per point; lines: predicted, dots: measured"
                ),
            )
        };
        Chart {
            series,
            fill: options.fill,
            title,
            subtitle,
        }
    }

    fn x_range(&self) -> (f64, f64) {
        if self.fill {
            return (0.0, 4.25);
        }
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0));
        let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
        ((lo - 1.0).max(0.0).floor(), (hi + 1.0).ceil())
    }

    /// From the decade under the smallest rate to the one over the largest (at most 100%).
    fn y_range(&self) -> (f64, f64) {
        let ys = self.series.iter().flat_map(|s| {
            s.points
                .iter()
                .flat_map(|(_, m)| [m.measured_rate(), m.predicted_rate])
        });
        let (lo, hi) = ys
            .filter(|&y| y > 0.0)
            .fold((1.0f64, 1e-12f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
        (
            10f64.powf(lo.log10().floor()),
            10f64.powf(hi.log10().ceil()).min(1.0),
        )
    }

    /// The figures behind the chart, as a table.
    fn table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .series
            .iter()
            .flat_map(|s| {
                s.points.iter().map(move |(_, m)| {
                    vec![
                        s.kind.to_string(),
                        human::percent_sig(m.target_fp_rate),
                        human::count(m.inserted),
                        format!("{:.2}", m.bits_per_key()),
                        human::percent_sig(m.predicted_rate),
                        human::percent_sig(m.measured_rate()),
                        human::count(m.false_positives),
                    ]
                })
            })
            .collect();
        human::table(
            &[
                "kind",
                "target",
                "keys",
                "bits/key",
                "predicted",
                "measured",
                "false positives",
            ],
            &rows,
        )
    }
}

/// Draws `chart` on `root`.
fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, chart: &Chart) -> Result<()> {
    let failed = |e: String| Error::Message(format!("cannot draw the chart: {e}"));
    draw_on(&root, chart).map_err(|e| failed(e.to_string()))?;
    root.present().map_err(|e| failed(e.to_string()))
}

fn draw_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (title_area, plot_area) = root.split_vertically(64);
    title_area.draw(&Text::new(
        chart.title.as_str(),
        (20, 10),
        ("sans-serif", 24).into_font().color(&BLACK),
    ))?;
    title_area.draw(&Text::new(
        chart.subtitle.as_str(),
        (20, 40),
        ("sans-serif", 14).into_font().color(&RGBColor(80, 80, 80)),
    ))?;
    let (x_lo, x_hi) = chart.x_range();
    let (y_lo, y_hi) = chart.y_range();
    let mut c = ChartBuilder::on(&plot_area)
        .margin_left(16)
        .margin_right(24)
        .margin_bottom(12)
        .x_label_area_size(48)
        .y_label_area_size(76)
        .build_cartesian_2d(x_lo..x_hi, (y_lo..y_hi).log_scale())?;
    c.configure_mesh()
        .x_desc(if chart.fill {
            "keys held / keys planned"
        } else {
            "bits per key"
        })
        .y_desc("false-positive rate (log scale)")
        .y_label_formatter(&|y| tick_percent(*y))
        .x_label_formatter(&|x| trim_zeros(format!("{x:.2}")))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(200, 200, 200))
        .draw()?;
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let predicted = s
            .points
            .iter()
            .filter(|(_, m)| m.predicted_rate > 0.0)
            .map(|(x, m)| (*x, m.predicted_rate));
        c.draw_series(LineSeries::new(predicted, color.stroke_width(2)))?
            .label(s.kind.name())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new([(0, 0), (22, 0)], color.stroke_width(2))
                    + Circle::new((11, 0), 4, color.filled())
            });
        // A rate measured as zero has no place on a log scale; the table still shows it.
        let measured = s
            .points
            .iter()
            .filter(|(_, m)| m.false_positives > 0)
            .map(|(x, m)| Circle::new((*x, m.measured_rate()), 4, color.filled()));
        c.draw_series(measured)?;
    }
    c.configure_series_labels()
        // Where the curves are not: rates fall to the right against bits per key, and rise
        // (leaving the lower right empty) against the fill.
        .position(if chart.fill {
            SeriesLabelPosition::LowerRight
        } else {
            SeriesLabelPosition::UpperRight
        })
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .draw()?;
    Ok(())
}

/// A rate on the y axis, whose ticks are powers of ten: `10%`, `1%`, `0.01%`.
fn tick_percent(rate: f64) -> String {
    format!("{}%", trim_zeros(format!("{:.6}", rate * 100.0)))
}

/// `2.50` as `2.5`, `5.00` as `5`.
fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Encodes a bitmap of `SIZE` RGB pixels as PNG.
fn encode_png(rgb: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let failed = |e: png::EncodingError| Error::Message(format!("cannot encode the PNG: {e}"));
    let mut encoder = png::Encoder::new(&mut out, SIZE.0, SIZE.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(rgb).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(out)
}

/// Gives plotters a font for "sans-serif": the file `BLOOMKIT_FONT` names, or a sans-serif
/// font installed on the machine. Once per process.
fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            let bytes = find_font()?;
            // plotters keeps fonts for the life of the process; so does this one.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).map_err(|_| {
                "the font found for the chart's text cannot be read; name another with \
                 BLOOMKIT_FONT=/path/to/font.ttf"
                    .to_string()
            })
        })
        .clone()
        .map_err(Error::Message)
}

/// The bytes of a font for the chart's text.
fn find_font() -> std::result::Result<Vec<u8>, String> {
    if let Some(path) = std::env::var_os("BLOOMKIT_FONT") {
        return std::fs::read(&path).map_err(|e| {
            format!(
                "cannot read the font BLOOMKIT_FONT names, '{}': {e}",
                Path::new(&path).display()
            )
        });
    }
    let mut db = fontdb::Database::new();
    db.load_system_fonts();
    let regular = |f: &&fontdb::FaceInfo| {
        f.index == 0 && f.style == fontdb::Style::Normal && f.weight == fontdb::Weight::NORMAL
    };
    let named = |name: &str| {
        db.faces()
            .filter(regular)
            .find(|f| f.families.iter().any(|(family, _)| family == name))
            .map(|f| f.id)
    };
    // Common sans-serif families first, then any regular face at all.
    let id = [
        "DejaVu Sans",
        "Liberation Sans",
        "Noto Sans",
        "Arial",
        "Helvetica",
        "Verdana",
    ]
    .into_iter()
    .find_map(named)
    .or_else(|| db.faces().find(regular).map(|f| f.id))
    .ok_or_else(|| {
        "no font found for the chart's text: install one (on Debian, \
             `apt-get install fonts-dejavu-core`) or name a .ttf file with \
             BLOOMKIT_FONT=/path/to/font.ttf"
            .to_string()
    })?;
    db.with_face_data(id, |data, _| data.to_vec())
        .ok_or_else(|| "the font found for the chart's text could not be read".to_string())
}
