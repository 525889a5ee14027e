//! Event files: JSON lines, plain or zstd-compressed (recognized by the zstd frame magic, not
//! by the file name), and the time range they cover.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context};

use crate::time::parse_rfc3339_millis;

/// The first four bytes of a zstd frame (RFC 8878, 3.1.1), little-endian 0xFD2FB528.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// A buffered reader of the decompressed lines of `path`.
pub fn open(path: &Path) -> anyhow::Result<Box<dyn BufRead>> {
    let open = || File::open(path).with_context(|| format!("opening {}", path.display()));
    let mut magic = [0u8; 4];
    let mut file = open()?;
    let read = file.read(&mut magic)?;
    let file = open()?;
    Ok(if read == 4 && magic == ZSTD_MAGIC {
        Box::new(BufReader::with_capacity(
            1 << 20,
            zstd::Decoder::new(file).context("starting zstd")?,
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 20, file))
    })
}

/// The `_time` string of one JSON event line, found without parsing the whole event: the
/// generator writes it as a plain string (no escapes can occur in a timestamp). `None` when the
/// line has no `"_time"` key followed by a string.
pub fn time_text(line: &str) -> Option<&str> {
    let after_key = &line[line.find("\"_time\"")? + "\"_time\"".len()..];
    let after_colon = after_key.trim_start().strip_prefix(':')?.trim_start();
    let value = after_colon.strip_prefix('"')?;
    Some(&value[..value.find('"')?])
}

/// The smallest and largest `_time` of the events of `path`, in milliseconds, and the number
/// of events.
pub fn time_range(path: &Path) -> anyhow::Result<(i64, i64, u64)> {
    let mut lines = open(path)?;
    let mut line = String::new();
    let (mut min, mut max, mut events) = (i64::MAX, i64::MIN, 0u64);
    for line_number in 1.. {
        line.clear();
        if lines
            .read_line(&mut line)
            .with_context(|| format!("reading {} line {line_number}", path.display()))?
            == 0
        {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let Some(time) = time_text(&line).and_then(parse_rfc3339_millis) else {
            bail!(
                "{} line {line_number}: no RFC 3339 \"_time\" string",
                path.display()
            );
        };
        min = min.min(time);
        max = max.max(time);
        events += 1;
    }
    if events == 0 {
        bail!("{} holds no events", path.display());
    }
    Ok((min, max, events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn finds_the_time_string() {
        let cases = [
            (
                r#"{"_time":"2026-11-01T08:15:02.117Z","x":1}"#,
                Some("2026-11-01T08:15:02.117Z"),
            ),
            (r#"{"a":"b", "_time" : "t1" }"#, Some("t1")),
            (r#"{"time":"t1"}"#, None),
            (r#"{"_time":17}"#, None),
            (r#"{"_time":"unterminated"#, None),
        ];
        for (line, expected) in cases {
            assert_eq!(time_text(line), expected, "{line}");
        }
    }

    #[test]
    fn reads_plain_and_zstd_files() -> anyhow::Result<()> {
        let dir = std::env::temp_dir().join(format!("logs-driver-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let text = concat!(
            r#"{"_time":"1970-01-01T00:00:01.000Z","message":"b"}"#,
            "\n\n",
            r#"{"_time":"1970-01-01T00:00:00.500Z","message":"a"}"#,
            "\n",
            r#"{"_time":"1970-01-01T00:00:03.000Z","message":"c"}"#,
            "\n"
        );
        let plain = dir.join("events.json");
        std::fs::write(&plain, text)?;
        let compressed = dir.join("events.json.anything");
        let mut encoder = zstd::Encoder::new(File::create(&compressed)?, 3)?;
        encoder.write_all(text.as_bytes())?;
        encoder.finish()?;
        for path in [&plain, &compressed] {
            assert_eq!(time_range(path)?, (500, 3000, 3), "{}", path.display());
        }
        std::fs::write(&plain, "{\"message\":\"no time\"}\n")?;
        assert!(time_range(&plain).is_err());
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
