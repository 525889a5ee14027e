//! Human sizes on the command line: `512MB`, `1GiB`, `2g`, `1048576`.

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
}
