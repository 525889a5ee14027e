//! `ingest-driver report`: the side-by-side table of run records, with the subject's ratio to
//! each baseline and how close each engine comes to the disk's limits, and the metric list
//! (`bench/results/ingest.json`).

use std::fmt::Write;

use serde::Serialize;

use crate::disk::DiskRecord;
use crate::run::RunRecord;

#[derive(Debug, Serialize)]
pub struct Metric {
    pub engine: String,
    pub format: String,
    pub metric: String,
    pub value: f64,
}

/// A row of the table: label, metric name in the list, how to get and show the value.
struct Row {
    label: &'static str,
    metric: &'static str,
    value: fn(&RunRecord, Option<&DiskRecord>) -> Option<f64>,
    decimals: usize,
}

const ROWS: &[Row] = &[
    Row {
        label: "events/s",
        metric: "events_per_s",
        value: |r, _| Some(r.events_per_s),
        decimals: 0,
    },
    Row {
        label: "MB/s",
        metric: "mb_per_s",
        value: |r, _| Some(r.mb_per_s),
        decimals: 1,
    },
    Row {
        label: "requests/s",
        metric: "requests_per_s",
        value: |r, _| Some(r.requests_per_s),
        decimals: 1,
    },
    Row {
        label: "server cores (CPU s / s)",
        metric: "server_cores",
        value: |r, _| Some(r.server_cores),
        decimals: 2,
    },
    Row {
        label: "MB per CPU-second",
        metric: "mb_per_cpu_s",
        value: |r, _| Some(r.mb_per_cpu_s),
        decimals: 1,
    },
    Row {
        label: "events per CPU-second",
        metric: "events_per_cpu_s",
        value: |r, _| Some(r.events_per_cpu_s),
        decimals: 0,
    },
    Row {
        label: "ack p50 ms",
        metric: "ack_p50_ms",
        value: |r, _| Some(r.ack_p50_ms),
        decimals: 1,
    },
    Row {
        label: "ack p99 ms",
        metric: "ack_p99_ms",
        value: |r, _| Some(r.ack_p99_ms),
        decimals: 1,
    },
    Row {
        label: "searchable p50 ms (from send)",
        metric: "searchable_p50_ms",
        value: |r, _| Some(r.searchable_p50_ms),
        decimals: 1,
    },
    Row {
        label: "searchable p99 ms (from send)",
        metric: "searchable_p99_ms",
        value: |r, _| Some(r.searchable_p99_ms),
        decimals: 1,
    },
    Row {
        label: "searchable p50 ms (from ack)",
        metric: "searchable_after_ack_p50_ms",
        value: |r, _| Some(r.searchable_after_ack_p50_ms),
        decimals: 1,
    },
    Row {
        label: "search round trip p50 ms",
        metric: "search_p50_ms",
        value: |r, _| Some(r.search_p50_ms),
        decimals: 2,
    },
    Row {
        label: "searches per marker p50",
        metric: "searches_per_marker_p50",
        value: |r, _| Some(r.searches_per_marker_p50 as f64),
        decimals: 0,
    },
    Row {
        label: "markers (not found)",
        metric: "markers",
        value: |r, _| Some(r.markers as f64),
        decimals: 0,
    },
    Row {
        label: "peak RSS MB",
        metric: "peak_rss_bytes",
        value: |r, _| Some(r.peak_rss_bytes as f64),
        decimals: 1,
    },
    Row {
        label: "disk bytes / raw byte",
        metric: "disk_per_raw_byte",
        value: |r, _| r.disk_per_raw_byte,
        decimals: 3,
    },
    Row {
        label: "failed items",
        metric: "failed_items",
        value: |r, _| Some(r.failed_items as f64),
        decimals: 0,
    },
    Row {
        label: "requests throttled (429/503)",
        metric: "throttled",
        value: |r, _| Some(r.throttled as f64),
        decimals: 0,
    },
    Row {
        label: "% of seq. write MB/s",
        metric: "pct_of_seq_write",
        value: |r, d| d.map(|d| 100.0 * r.mb_per_s / d.seq_write_mb_per_s),
        decimals: 1,
    },
    Row {
        label: "requests/s / fsync/s (%)",
        metric: "pct_of_fsync_rate",
        value: |r, d| d.map(|d| 100.0 * r.requests_per_s / d.fsync_per_s),
        decimals: 1,
    },
];

/// The column name of a record: its engine, with the format when ndjson (Quarry's second
/// format; bulk and jsonline are each the only format of their engines).
fn column(record: &RunRecord) -> String {
    match record.format {
        crate::events::Format::Bulk | crate::events::Format::Jsonline => record.engine.clone(),
        crate::events::Format::Ndjson => format!("{}-ndjson", record.engine),
    }
}

pub fn build(
    records: &[RunRecord],
    disk: Option<&DiskRecord>,
    subject: &str,
    baselines: &[String],
) -> (String, Vec<Metric>) {
    let columns: Vec<String> = records.iter().map(column).collect();
    let subject_record = records.iter().position(|r| column(r) == subject);
    let ratio_columns: Vec<(String, Option<usize>)> = baselines
        .iter()
        .map(|b| {
            (
                format!("{subject}/{b}"),
                columns.iter().position(|c| c == b),
            )
        })
        .collect();
    let mut table = String::new();
    if let Some(first) = records.first() {
        let _ = writeln!(
            table,
            "{} events ({:.1} MB of JSON), {} clients, {} events per request",
            group_thousands(first.events as f64, 0),
            first.raw_bytes as f64 / 1e6,
            first.clients,
            first.batch
        );
    }
    // 16 characters a column, more for a longer name (`quarry/victorialogs`), so that names
    // never run together.
    let widths: Vec<usize> = columns
        .iter()
        .chain(ratio_columns.iter().map(|(name, _)| name))
        .map(|name| (name.len() + 2).max(16))
        .collect();
    let (engine_widths, ratio_widths) = widths.split_at(columns.len());
    let _ = write!(table, "{:<32}", "");
    for (name, width) in columns
        .iter()
        .chain(ratio_columns.iter().map(|(name, _)| name))
        .zip(&widths)
    {
        let _ = write!(table, "{name:>width$}");
    }
    table.push('\n');
    let mut metrics = Vec::new();
    for row in ROWS {
        let _ = write!(table, "{:<32}", row.label);
        let values: Vec<Option<f64>> = records.iter().map(|r| (row.value)(r, disk)).collect();
        for ((record, value), width) in records.iter().zip(&values).zip(engine_widths) {
            let cell = match value {
                None => "-".to_owned(),
                Some(v) if row.metric == "peak_rss_bytes" => group_thousands(v / 1e6, 1),
                Some(v) if row.metric == "markers" => {
                    format!("{} ({})", group_thousands(*v, 0), record.markers_not_found)
                }
                Some(v) => group_thousands(*v, row.decimals),
            };
            let _ = write!(table, "{cell:>width$}");
            if let Some(value) = value {
                metrics.push(Metric {
                    engine: record.engine.clone(),
                    format: format!("{:?}", record.format).to_lowercase(),
                    metric: row.metric.to_owned(),
                    value: *value,
                });
                if row.metric == "markers" {
                    metrics.push(Metric {
                        engine: record.engine.clone(),
                        format: format!("{:?}", record.format).to_lowercase(),
                        metric: "markers_not_found".to_owned(),
                        value: record.markers_not_found as f64,
                    });
                }
            }
        }
        for ((_, baseline), width) in ratio_columns.iter().zip(ratio_widths) {
            let ratio = match (subject_record, baseline) {
                (Some(s), Some(b)) if row.metric != "markers" => match (values[s], values[*b]) {
                    (Some(n), Some(d)) if d > 0.0 => format!("{:.2}", n / d),
                    _ => "-".to_owned(),
                },
                _ => "-".to_owned(),
            };
            let _ = write!(table, "{ratio:>width$}");
        }
        table.push('\n');
    }
    if let Some(disk) = disk {
        let _ = writeln!(
            table,
            "machine ({}): {} fsync/s (append 4 KiB + fdatasync; p50 {:.0} µs, p99 {:.0} µs), sequential write {} MB/s ({} MB, fdatasync at the end)",
            disk.dir,
            group_thousands(disk.fsync_per_s, 0),
            disk.fsync_p50_us,
            disk.fsync_p99_us,
            group_thousands(disk.seq_write_mb_per_s, 1),
            group_thousands(disk.seq_write_bytes as f64 / 1e6, 0),
        );
        for (metric, value) in [
            ("fsync_per_s", disk.fsync_per_s),
            ("fsync_p50_us", disk.fsync_p50_us),
            ("fsync_p99_us", disk.fsync_p99_us),
            ("seq_write_mb_per_s", disk.seq_write_mb_per_s),
        ] {
            metrics.push(Metric {
                engine: "machine".to_owned(),
                format: "-".to_owned(),
                metric: metric.to_owned(),
                value,
            });
        }
    }
    (table, metrics)
}

fn group_thousands(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    let (sign, text) = text
        .strip_prefix('-')
        .map_or(("", text.as_str()), |t| ("-", t));
    let (whole, fraction) = text.split_at(text.find('.').unwrap_or(text.len()));
    let mut grouped = String::new();
    for (position, digit) in whole.chars().enumerate() {
        if position > 0 && (whole.len() - position) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("{sign}{grouped}{fraction}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Format;

    fn record(engine: &str, format: Format, mb_per_s: f64) -> RunRecord {
        RunRecord {
            engine: engine.to_owned(),
            format,
            events: 100_000,
            raw_bytes: 27_500_000,
            requests: 100,
            clients: 8,
            batch: 1000,
            seconds: 27.5 / mb_per_s,
            mb_per_s,
            events_per_s: mb_per_s * 3636.0,
            requests_per_s: mb_per_s * 3.6,
            server_cpu_seconds: 2.0,
            server_cores: 1.5,
            mb_per_cpu_s: mb_per_s / 1.5,
            events_per_cpu_s: 1000.0,
            ack_p50_ms: 10.0,
            ack_p99_ms: 40.0,
            ack_max_ms: 50.0,
            markers: 12,
            markers_not_found: 1,
            searchable_p50_ms: 500.0,
            searchable_p99_ms: 1000.0,
            searchable_after_ack_p50_ms: 490.0,
            searchable_after_ack_p99_ms: 990.0,
            marker_ack_p50_ms: 10.0,
            search_p50_ms: 0.5,
            search_p99_ms: 2.0,
            searches_per_marker_p50: 3,
            peak_rss_bytes: 1_234_000_000,
            shutdown_seconds: Some(0.5),
            disk_bytes: None,
            disk_per_raw_byte: None,
            failed_items: 0,
            counted: None,
            throttled: 3,
        }
    }

    #[test]
    fn builds_table_ratios_and_metrics() {
        let records = [
            record("tantivy", Format::Bulk, 10.0),
            record("lucene", Format::Bulk, 20.0),
            record("quarry", Format::Bulk, 40.0),
            record("quarry", Format::Ndjson, 50.0),
            record("victorialogs", Format::Jsonline, 80.0),
        ];
        let disk = DiskRecord {
            fsync_per_s: 1000.0,
            fsync_p50_us: 900.0,
            fsync_p99_us: 2000.0,
            seq_write_mb_per_s: 400.0,
            seq_write_bytes: 1 << 30,
            dir: "/tmp/x".to_owned(),
        };
        let baselines = [
            "lucene".to_owned(),
            "tantivy".to_owned(),
            "victorialogs".to_owned(),
        ];
        let (table, metrics) = build(&records, Some(&disk), "quarry", &baselines);
        let line = |label: &str| {
            table
                .lines()
                .find(|line| line.starts_with(label))
                .unwrap_or_else(|| panic!("no {label} in\n{table}"))
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        assert_eq!(
            line("MB/s"),
            ["MB/s", "10.0", "20.0", "40.0", "50.0", "80.0", "2.00", "4.00", "0.50"]
        );
        assert_eq!(line("events/s")[1], "36,360");
        assert_eq!(line("peak RSS MB")[3..5], ["1,234.0", "1,234.0"]);
        assert_eq!(line("disk bytes")[5..], ["-"; 8]);
        assert_eq!(
            line("% of seq. write")[5..9],
            ["2.5", "5.0", "10.0", "12.5"]
        );
        assert!(table.contains("quarry-ndjson"));
        // A column name longer than 16 characters does not run into the one before it.
        let header: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(
            header[4..],
            [
                "victorialogs",
                "quarry/lucene",
                "quarry/tantivy",
                "quarry/victorialogs"
            ]
        );
        assert!(table.contains("1,000 fsync/s"));
        let value = |engine: &str, format: &str, metric: &str| {
            metrics
                .iter()
                .find(|m| m.engine == engine && m.format == format && m.metric == metric)
                .map(|m| m.value)
        };
        assert_eq!(value("quarry", "ndjson", "mb_per_s"), Some(50.0));
        assert_eq!(value("victorialogs", "jsonline", "mb_per_s"), Some(80.0));
        assert_eq!(value("lucene", "bulk", "markers_not_found"), Some(1.0));
        assert_eq!(value("tantivy", "bulk", "disk_per_raw_byte"), None);
        assert_eq!(value("machine", "-", "seq_write_mb_per_s"), Some(400.0));
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(group_thousands(1234567.891, 1), "1,234,567.9");
        assert_eq!(group_thousands(999.0, 0), "999");
        assert_eq!(group_thousands(-1000.0, 0), "-1,000");
    }
}
