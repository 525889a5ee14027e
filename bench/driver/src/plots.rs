//! PNG charts of a metric list (`bench/results/search.json`), drawn by `search-plots`:
//!
//! - `latency.png`: latency percentiles p50 … p99.9 of each engine on a log scale, one panel per
//!   search workload;
//! - `qps.png`: queries per second with 1, 2, 4 … search threads (`qps_threads_N`), a group of
//!   bars per thread count, one bar per engine, one panel per workload.
//!
//! Text is drawn with DejaVu Sans compiled into the binary (the `dejavu` crate, through
//! plotters' `ab_glyph` feature), so no system font, font-kit or fontconfig is needed.

use std::collections::BTreeSet;
use std::fmt::Display;
use std::fs;
use std::path::Path;

use anyhow::{anyhow, Context};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Deserialize;

/// The percentiles drawn, in order: metric name and axis label.
pub const PERCENTILES: [(&str, &str); 6] = [
    ("latency_p50_us", "p50"),
    ("latency_p75_us", "p75"),
    ("latency_p90_us", "p90"),
    ("latency_p95_us", "p95"),
    ("latency_p99_us", "p99"),
    ("latency_p999_us", "p99.9"),
];

/// Engines in this order come first, each in its own colour; others follow by name.
const ENGINE_ORDER: [&str; 3] = ["quarry", "tantivy", "lucene"];
const COLORS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

const FONT: &str = "sans-serif";
const PANEL: (u32, u32) = (640, 430);
/// The title and, under it, the legend shared by all panels.
const HEADER_HEIGHT: u32 = 84;

/// A row of the metric list.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Row {
    pub engine: String,
    pub workload: String,
    pub metric: String,
    pub value: f64,
}

/// The metric list, with the look-ups the charts need.
pub struct Figures {
    rows: Vec<Row>,
}

impl Figures {
    pub fn new(rows: Vec<Row>) -> Figures {
        Figures { rows }
    }

    pub fn load(path: &Path) -> anyhow::Result<Figures> {
        let text =
            fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let rows = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a metric list", path.display()))?;
        Ok(Figures::new(rows))
    }

    pub fn value(&self, engine: &str, workload: &str, metric: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.engine == engine && r.workload == workload && r.metric == metric)
            .map(|r| r.value)
    }

    /// Every engine: quarry, tantivy, lucene, then any other by name.
    pub fn engines(&self) -> Vec<String> {
        let names: BTreeSet<&str> = self.rows.iter().map(|r| r.engine.as_str()).collect();
        let mut engines: Vec<String> = ENGINE_ORDER
            .iter()
            .filter(|name| names.contains(*name))
            .map(|name| (*name).to_owned())
            .collect();
        for name in names {
            if !ENGINE_ORDER.contains(&name) {
                engines.push(name.to_owned());
            }
        }
        engines
    }

    /// Workloads with at least one row whose metric `is_wanted`, in the list's order.
    fn workloads_with(&self, is_wanted: impl Fn(&str) -> bool) -> Vec<String> {
        let mut workloads: Vec<String> = Vec::new();
        for row in &self.rows {
            if is_wanted(&row.metric) && !workloads.contains(&row.workload) {
                workloads.push(row.workload.clone());
            }
        }
        workloads
    }

    pub fn latency_workloads(&self) -> Vec<String> {
        self.workloads_with(|metric| PERCENTILES.iter().any(|(name, _)| *name == metric))
    }

    pub fn qps_workloads(&self) -> Vec<String> {
        self.workloads_with(|metric| qps_threads(metric).is_some())
    }

    /// `(percentile index, microseconds)` of one engine's run, percentiles it lacks left out.
    pub fn latency_points(&self, engine: &str, workload: &str) -> Vec<(usize, f64)> {
        PERCENTILES
            .iter()
            .enumerate()
            .filter_map(|(index, (metric, _))| {
                self.value(engine, workload, metric)
                    .map(|value| (index, value))
            })
            .collect()
    }

    /// Each engine's colour: its place in [`Figures::engines`], so an engine keeps its colour
    /// from chart to chart.
    pub fn color(&self, engine: &str) -> RGBColor {
        let index = self.engines().iter().position(|e| e == engine).unwrap_or(0);
        COLORS[index % COLORS.len()]
    }

    /// `(threads, queries per second)` of one engine's throughput runs, by thread count.
    pub fn qps_of(&self, engine: &str, workload: &str) -> Vec<(usize, f64)> {
        self.thread_counts(workload)
            .into_iter()
            .filter_map(|n| {
                self.value(engine, workload, &qps_metric(n))
                    .map(|qps| (n, qps))
            })
            .collect()
    }

    /// The thread counts of any engine's `qps_threads_N` for `workload`, ascending.
    pub fn thread_counts(&self, workload: &str) -> Vec<usize> {
        let counts: BTreeSet<usize> = self
            .rows
            .iter()
            .filter(|r| r.workload == workload)
            .filter_map(|r| qps_threads(&r.metric))
            .collect();
        counts.into_iter().collect()
    }
}

/// N of a `qps_threads_N` metric.
pub fn qps_threads(metric: &str) -> Option<usize> {
    metric.strip_prefix("qps_threads_")?.parse().ok()
}

/// Makes DejaVu Sans the font behind every `"sans-serif"` text. Call once before drawing.
pub fn register_font() -> anyhow::Result<()> {
    plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| anyhow!("DejaVu Sans is not a font ab_glyph reads"))?;
    plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold())
        .map_err(|_| anyhow!("DejaVu Sans Bold is not a font ab_glyph reads"))
}

/// Writes `latency.png` into `dir`; `None` when the list has no latency figures.
pub fn draw_latency(figures: &Figures, dir: &Path) -> anyhow::Result<Option<std::path::PathBuf>> {
    let workloads = figures.latency_workloads();
    if workloads.is_empty() {
        return Ok(None);
    }
    let path = dir.join("latency.png");
    let title = "Search latency by percentile (log scale; lower is better)";
    let engines: Vec<String> = figures
        .engines()
        .into_iter()
        .filter(|engine| {
            workloads
                .iter()
                .any(|workload| !figures.latency_points(engine, workload).is_empty())
        })
        .collect();
    draw_panels(
        figures,
        &path,
        title,
        &engines,
        &workloads,
        |area, workload| latency_panel(figures, area, workload),
    )?;
    Ok(Some(path))
}

/// Writes `qps.png` into `dir`; `None` when the list has no throughput figures.
pub fn draw_qps(figures: &Figures, dir: &Path) -> anyhow::Result<Option<std::path::PathBuf>> {
    let workloads = figures.qps_workloads();
    if workloads.is_empty() {
        return Ok(None);
    }
    let path = dir.join("qps.png");
    let title = "Throughput by search threads (queries/s; higher is better)";
    let engines: Vec<String> = figures
        .engines()
        .into_iter()
        .filter(|engine| {
            workloads
                .iter()
                .any(|workload| !figures.qps_of(engine, workload).is_empty())
        })
        .collect();
    draw_panels(
        figures,
        &path,
        title,
        &engines,
        &workloads,
        |area, workload| qps_panel(figures, area, workload),
    )?;
    Ok(Some(path))
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// One PNG: `title` across the top, the engines' colours under it, then a grid of panels, two
/// to a row, one per workload.
fn draw_panels(
    figures: &Figures,
    path: &Path,
    title: &str,
    engines: &[String],
    workloads: &[String],
    mut panel: impl FnMut(&Area, &str) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let columns = workloads.len().min(2);
    let rows = workloads.len().div_ceil(2);
    let size = (
        PANEL.0 * columns as u32,
        HEADER_HEIGHT + PANEL.1 * rows as u32,
    );
    let root = BitMapBackend::new(path, size).into_drawing_area();
    plotted(root.fill(&WHITE))?;
    let (top, body) = root.split_vertically(HEADER_HEIGHT);
    let title_style = TextStyle::from((FONT, 26).into_font().style(FontStyle::Bold))
        .pos(Pos::new(HPos::Center, VPos::Center));
    plotted(top.draw_text(title, &title_style, (size.0 as i32 / 2, 26)))?;
    draw_legend(figures, &top, engines, size.0 as i32 / 2, 64)?;
    for (area, workload) in body.split_evenly((rows, columns)).iter().zip(workloads) {
        panel(area, workload)?;
    }
    plotted(root.present()).with_context(|| format!("writing {}", path.display()))
}

/// A row of colour swatches and engine names, centred on `center_x`.
fn draw_legend(
    figures: &Figures,
    area: &Area,
    engines: &[String],
    center_x: i32,
    y: i32,
) -> anyhow::Result<()> {
    const SWATCH: i32 = 26;
    const GAP: i32 = 36;
    let style = TextStyle::from((FONT, 18).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut widths = Vec::new();
    for engine in engines {
        widths.push(plotted(area.estimate_text_size(engine, &style))?.0 as i32);
    }
    let total: i32 = widths.iter().map(|w| SWATCH + 8 + w).sum::<i32>()
        + GAP * (engines.len() as i32 - 1).max(0);
    let mut x = center_x - total / 2;
    for (engine, width) in engines.iter().zip(widths) {
        let color = figures.color(engine);
        plotted(area.draw(&Rectangle::new(
            [(x, y - 6), (x + SWATCH, y + 6)],
            color.filled(),
        )))?;
        plotted(area.draw_text(engine, &style, (x + SWATCH + 8, y)))?;
        x += SWATCH + 8 + width + GAP;
    }
    Ok(())
}

fn latency_panel(figures: &Figures, area: &Area, workload: &str) -> anyhow::Result<()> {
    let series: Vec<(String, Vec<(usize, f64)>)> = figures
        .engines()
        .into_iter()
        .map(|engine| {
            let mut points = figures.latency_points(&engine, workload);
            // A log scale has no room for zero.
            points.retain(|(_, value)| *value > 0.0);
            (engine, points)
        })
        .filter(|(_, points)| !points.is_empty())
        .collect();
    let values = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|p| p.1));
    let (low, high) = values.fold((f64::MAX, 0.0f64), |(low, high), v| {
        (low.min(v), high.max(v))
    });
    if series.is_empty() {
        return Ok(());
    }
    let (low, high) = (low / 1.5, high * 1.5);
    let mut chart = plotted(
        ChartBuilder::on(area)
            .caption(caption(figures, workload), (FONT, 20))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(78)
            .build_cartesian_2d(
                (0..PERCENTILES.len() - 1).into_segmented(),
                (low..high)
                    .log_scale()
                    .with_key_points(log_key_points(low, high)),
            ),
    )?;
    plotted(
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(PERCENTILES.len())
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(index) => PERCENTILES
                    .get(*index)
                    .map_or_else(String::new, |(_, label)| (*label).to_owned()),
                _ => String::new(),
            })
            .y_label_formatter(&|y| micros(*y))
            .y_desc("latency")
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(WHITE.mix(0.0))
            .draw(),
    )?;
    for (engine, points) in series {
        let color = figures.color(&engine);
        let points: Vec<(SegmentValue<usize>, f64)> = points
            .into_iter()
            .map(|(index, value)| (SegmentValue::CenterOf(index), value))
            .collect();
        plotted(chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(3))))?;
        plotted(
            chart.draw_series(
                points
                    .into_iter()
                    .map(|point| Circle::new(point, 4, color.filled())),
            ),
        )?;
    }
    Ok(())
}

/// Log-axis labels at 1, 2 and 5 times each power of ten between `low` and `high`.
pub fn log_key_points(low: f64, high: f64) -> Vec<f64> {
    let mut points = Vec::new();
    let mut decade = 10f64.powf(low.log10().floor());
    while decade <= high {
        for step in [1.0, 2.0, 5.0] {
            let point = decade * step;
            if (low..=high).contains(&point) {
                points.push(point);
            }
        }
        decade *= 10.0;
    }
    points
}

fn qps_panel(figures: &Figures, area: &Area, workload: &str) -> anyhow::Result<()> {
    let threads = figures.thread_counts(workload);
    let engines: Vec<(String, Vec<(usize, f64)>)> = figures
        .engines()
        .into_iter()
        .map(|engine| {
            let qps = figures.qps_of(&engine, workload);
            (engine, qps)
        })
        .filter(|(_, qps)| !qps.is_empty())
        .collect();
    let high = engines
        .iter()
        .flat_map(|(_, qps)| qps.iter().map(|q| q.1))
        .fold(0.0, f64::max);
    if engines.is_empty() || high <= 0.0 {
        return Ok(());
    }
    // One slot per bar and an empty slot between groups: group g, engine e is slot
    // g * (engines + 1) + e.
    let group = engines.len() + 1;
    let slots = threads.len() * group - 1;
    let mut chart = plotted(
        ChartBuilder::on(area)
            .caption(caption(figures, workload), (FONT, 20))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(78)
            .build_cartesian_2d((0..slots - 1).into_segmented(), 0.0..high * 1.12),
    )?;
    // The thread count goes under the middle bar of its group (the left one of the two
    // middle bars when the group has an even number of bars).
    let label_slot = (engines.len() - 1) / 2;
    plotted(
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(slots)
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(slot) if slot % group == label_slot => {
                    let n = threads[slot / group];
                    format!("{n} thread{}", if n == 1 { "" } else { "s" })
                }
                _ => String::new(),
            })
            .y_labels(8)
            .y_label_formatter(&|y| per_second(*y))
            .y_desc("queries/s")
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(WHITE.mix(0.0))
            .draw(),
    )?;
    let value_style =
        TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    for (index, (engine, qps)) in engines.iter().enumerate() {
        let color = figures.color(engine);
        let bars: Vec<(usize, f64)> = qps
            .iter()
            .filter_map(|&(n, qps)| {
                let g = threads.iter().position(|&t| t == n)?;
                Some((g * group + index, qps))
            })
            .collect();
        plotted(chart.draw_series(bars.iter().map(|&(slot, qps)| {
            let mut bar = Rectangle::new(
                [
                    (SegmentValue::Exact(slot), 0.0),
                    (SegmentValue::Exact(slot + 1), qps),
                ],
                color.filled(),
            );
            bar.set_margin(0, 0, 2, 2);
            bar
        })))?;
        plotted(chart.draw_series(bars.iter().map(|&(slot, qps)| {
            Text::new(
                per_second(qps),
                (SegmentValue::CenterOf(slot), qps),
                value_style.clone(),
            )
        })))?;
    }
    Ok(())
}

fn qps_metric(threads: usize) -> String {
    format!("qps_threads_{threads}")
}

/// The panel's caption: the workload and, when every engine ran as many, the query count.
fn caption(figures: &Figures, workload: &str) -> String {
    let counts: BTreeSet<u64> = figures
        .engines()
        .iter()
        .filter_map(|engine| figures.value(engine, workload, "queries"))
        .map(|queries| queries as u64)
        .collect();
    match counts.into_iter().collect::<Vec<_>>()[..] {
        [queries] => format!("{workload} ({} queries)", thousands(queries)),
        _ => workload.to_owned(),
    }
}

/// `40000` → `40,000`.
fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A latency axis label: `50 µs`, `1.5 ms`.
pub fn micros(value: f64) -> String {
    if value >= 1000.0 {
        format!("{} ms", short(value / 1000.0))
    } else {
        format!("{} µs", short(value))
    }
}

/// A rate: `950`, `25.7k`.
pub fn per_second(value: f64) -> String {
    if value >= 1000.0 {
        format!("{}k", short(value / 1000.0))
    } else {
        format!("{value:.0}")
    }
}

/// At most one decimal, none when it is zero.
fn short(value: f64) -> String {
    let text = format!("{value:.1}");
    text.strip_suffix(".0").map_or(text.clone(), str::to_owned)
}

/// plotters' errors carry the backend's error type, which need not be `Send + Sync`.
fn plotted<T, E: Display>(result: Result<T, E>) -> anyhow::Result<T> {
    result.map_err(|error| anyhow!("drawing: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(engine: &str, workload: &str, metric: &str, value: f64) -> Row {
        Row {
            engine: engine.to_owned(),
            workload: workload.to_owned(),
            metric: metric.to_owned(),
            value,
        }
    }

    fn sample() -> Figures {
        Figures::new(vec![
            row("tantivy", "index", "seconds", 20.0),
            row("tantivy", "or_top10", "latency_p50_us", 100.0),
            row("tantivy", "or_top10", "latency_p999_us", 900.0),
            row("tantivy", "or_top10", "qps_threads_4", 20_000.0),
            row("tantivy", "or_top10", "qps_threads_1", 8_000.0),
            row("quarry", "or_top10", "latency_p50_us", 80.0),
            row("quarry", "and_count", "qps_threads_2", 30_000.0),
            row("other", "and_count", "latency_p99_us", 5.0),
        ])
    }

    #[test]
    fn orders_engines_and_workloads() {
        let figures = sample();
        assert_eq!(figures.engines(), ["quarry", "tantivy", "other"]);
        assert_eq!(figures.latency_workloads(), ["or_top10", "and_count"]);
        assert_eq!(figures.qps_workloads(), ["or_top10", "and_count"]);
        assert_eq!(figures.thread_counts("or_top10"), [1, 4]);
        assert_eq!(
            figures.latency_points("tantivy", "or_top10"),
            [(0, 100.0), (5, 900.0)]
        );
        assert_eq!(
            figures.qps_of("tantivy", "or_top10"),
            [(1, 8_000.0), (4, 20_000.0)]
        );
        assert!(figures.qps_of("quarry", "or_top10").is_empty());
        assert_ne!(figures.color("quarry"), figures.color("tantivy"));
    }

    #[test]
    fn formats_axis_labels() {
        let cases = [
            (micros(50.0), "50 µs"),
            (micros(12.5), "12.5 µs"),
            (micros(1500.0), "1.5 ms"),
            (micros(2000.0), "2 ms"),
            (per_second(950.4), "950"),
            (per_second(25_730.0), "25.7k"),
            (thousands(40_000), "40,000"),
            (thousands(999), "999"),
            (thousands(1_234_567), "1,234,567"),
        ];
        for (got, expected) in cases {
            assert_eq!(got, expected);
        }
        assert_eq!(log_key_points(60.0, 1200.0), [100.0, 200.0, 500.0, 1000.0]);
        assert_eq!(log_key_points(1.0, 2.0), [1.0, 2.0]);
        assert_eq!(qps_threads("qps_threads_16"), Some(16));
        assert_eq!(qps_threads("qps_threads_"), None);
        assert_eq!(qps_threads("latency_p50_us"), None);
    }

    /// Both charts of a small list, written to PNG files that decode.
    #[test]
    fn draws_both_charts() -> anyhow::Result<()> {
        register_font()?;
        let dir = std::env::temp_dir().join(format!("search-plots-test-{}", std::process::id()));
        fs::create_dir_all(&dir)?;
        let figures = sample();
        let drawn = (draw_latency(&figures, &dir), draw_qps(&figures, &dir));
        let sizes = [dir.join("latency.png"), dir.join("qps.png")]
            .map(|path| fs::metadata(path).map(|m| m.len()).unwrap_or(0));
        let png_signature = fs::read(dir.join("qps.png"))
            .map(|bytes| bytes.starts_with(b"\x89PNG"))
            .unwrap_or(false);
        fs::remove_dir_all(&dir)?;
        assert!(drawn.0?.is_some() && drawn.1?.is_some());
        assert!(sizes.iter().all(|&size| size > 1000), "{sizes:?}");
        assert!(png_signature);
        Ok(())
    }
}
