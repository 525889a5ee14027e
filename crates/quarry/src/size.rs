//! Human sizes on the command line: `512MB`, `1GiB`, `2g`, `1048576`, in binary units (a
//! KB is 1024 bytes), read by `parse_size` and written by `format_size`.

pub fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 512MB, 2GiB)"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        other => return Err(format!("unknown size unit '{other}' (use KB, MB or GB)")),
    };
    Ok((number * scale) as usize)
}

/// `bytes` in the largest unit `parse_size` reads that keeps a digit before the point:
/// `512 B`, `1.5 KB`, `10.0 MB`, `2.0 GB`.
pub fn format_size(bytes: u64) -> String {
    let mut value = bytes as f64;
    for unit in ["KB", "MB", "GB"] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        if value < 1024.0 || unit == "GB" {
            return format!("{value:.1} {unit}");
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes() {
        assert_eq!(super::parse_size("512MB"), Ok(512 << 20));
        assert_eq!(super::parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(super::parse_size("100"), Ok(100));
        assert!(super::parse_size("lots").is_err());
        assert!(super::parse_size("3TB").is_err());
    }

    #[test]
    fn formatted_sizes() {
        for (bytes, text) in [
            (0, "0 B"),
            (1023, "1023 B"),
            (1536, "1.5 KB"),
            (10 << 20, "10.0 MB"),
            (3 << 29, "1.5 GB"),
            (5000 << 30, "5000.0 GB"),
        ] {
            assert_eq!(super::format_size(bytes), text, "{bytes}");
        }
    }
}
