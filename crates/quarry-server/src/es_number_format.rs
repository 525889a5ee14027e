//! Number formats as Elasticsearch takes them in `format` (a histogram's `key_as_string`,
//! `docvalue_fields`): Java's `DecimalFormat` patterns such as `#.0`, `##0.00` or
//! `Value is #,##0.0 ms`. The part Quarry reads: a literal prefix and suffix (quote with `'`),
//! `0` for a digit always shown, `#` for one shown when not a leading or trailing zero, `,`
//! for grouping and `.` for the decimal point. Rounding is half-even on the value's exact
//! binary expansion, as Java's is. Percent, per-mille, exponents and a separate negative
//! pattern (`;`) are refused by name.

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DecimalFormat {
    prefix: String,
    suffix: String,
    /// Integer digits always shown (leading zeros).
    min_integer: usize,
    min_fraction: usize,
    max_fraction: usize,
    /// Digits per group in the integer part, when the pattern groups.
    grouping: Option<usize>,
}

impl DecimalFormat {
    /// Reads `pattern`, or says which part of it Quarry does not support.
    pub(crate) fn parse(pattern: &str) -> Result<DecimalFormat, String> {
        let mut prefix = String::new();
        let mut suffix = String::new();
        let mut number = String::new();
        // 0: prefix, 1: number, 2: suffix.
        let mut part = 0;
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            let literal = match c {
                '\'' => {
                    let mut text = String::new();
                    for c in chars.by_ref() {
                        if c == '\'' {
                            break;
                        }
                        text.push(c);
                    }
                    if text.is_empty() {
                        "'".to_owned()
                    } else {
                        text
                    }
                }
                '#' | '0' | ',' | '.' if part < 2 => {
                    part = 1;
                    number.push(c);
                    continue;
                }
                '%' | '\u{2030}' | 'E' | ';' | '\u{a4}' => {
                    return Err(format!(
                        "[{pattern}]: `{c}` (percent, per mille, exponent, currency or a \
                         negative pattern) is not supported"
                    ))
                }
                other => other.to_string(),
            };
            if part == 0 {
                prefix.push_str(&literal);
            } else {
                part = 2;
                suffix.push_str(&literal);
            }
        }
        if number.is_empty() {
            return Err(format!("[{pattern}]: no digits (`0` or `#`)"));
        }
        let (integer, fraction) = number.split_once('.').unwrap_or((&number, ""));
        if fraction.contains(['.', ',']) {
            return Err(format!("[{pattern}]: a `.` or `,` after the decimal point"));
        }
        let grouping = integer
            .rfind(',')
            .map(|at| integer.len() - at - 1)
            .filter(|&size| size > 0);
        let digits = integer.replace(',', "");
        if digits.trim_start_matches('#').contains('#') {
            return Err(format!("[{pattern}]: `#` after a `0` in the integer part"));
        }
        if fraction.trim_end_matches('#').contains('#') {
            return Err(format!("[{pattern}]: `0` after a `#` in the fraction"));
        }
        Ok(DecimalFormat {
            prefix,
            suffix,
            min_integer: digits.matches('0').count(),
            min_fraction: fraction.matches('0').count(),
            max_fraction: fraction.len(),
            grouping,
        })
    }

    /// `value` in this format.
    pub(crate) fn format(&self, value: f64) -> String {
        if value.is_nan() {
            return "NaN".to_owned();
        }
        // A negative value keeps its sign when it rounds to zero (`#` of -0.2 is `-0`).
        let sign = if value < 0.0 { "-" } else { "" };
        if value.is_infinite() {
            return format!("{sign}{}\u{221e}{}", self.prefix, self.suffix);
        }
        // Rust rounds `{:.N}` half-even on the exact value, as Java's HALF_EVEN does.
        let fixed = format!("{:.*}", self.max_fraction, value.abs());
        let (integer, fraction) = fixed.split_once('.').unwrap_or((&fixed, ""));
        let fraction = fraction.trim_end_matches('0');
        let fraction = format!("{fraction:0<width$}", width = self.min_fraction);
        let integer = integer.trim_start_matches('0');
        let mut integer = format!("{integer:0>width$}", width = self.min_integer);
        if let Some(size) = self.grouping {
            let digits: Vec<char> = integer.chars().collect();
            let mut grouped = String::new();
            for (i, digit) in digits.iter().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(size) {
                    grouped.push(',');
                }
                grouped.push(*digit);
            }
            integer = grouped;
        }
        // Java keeps a lone zero when nothing else would show (`#` of 0.2 is `0`).
        if integer.is_empty() && fraction.is_empty() {
            integer.push('0');
        }
        let point = if fraction.is_empty() { "" } else { "." };
        format!(
            "{sign}{}{integer}{point}{fraction}{}",
            self.prefix, self.suffix
        )
    }
}

#[cfg(test)]
mod tests {
    use super::DecimalFormat;

    /// Java's `new DecimalFormat(pattern).format(value)` for each case (JDK 17).
    #[test]
    fn formats_as_java_decimal_format_does() {
        let cases: &[(&str, f64, &str)] = &[
            ("#.0", 1.0, "1.0"),
            ("#.0", 0.5, ".5"),
            ("#.0", 2.25, "2.2"),
            ("#.0", 2.35, "2.4"),
            ("#.##", 3.0, "3"),
            ("#.##", 3.14659, "3.15"),
            ("0.00", 0.0, "0.00"),
            ("0.00", -1.005, "-1.00"),
            ("#", 0.2, "0"),
            ("#", -0.2, "-0"),
            ("#,##0.0", 1234567.25, "1,234,567.2"),
            ("#,##0", 999.0, "999"),
            ("000", 7.0, "007"),
            ("Value is ##0.0", 0.0, "Value is 0.0"),
            ("Value is ##0.0", 150.0, "Value is 150.0"),
            ("##0.0 'ms'", 2.5, "2.5 ms"),
        ];
        for &(pattern, value, want) in cases {
            let format = DecimalFormat::parse(pattern).unwrap();
            assert_eq!(format.format(value), want, "{pattern} of {value}");
        }
        for bad in ["0.0%", "#E0", "#;(#)", "text", "#.#0"] {
            assert!(DecimalFormat::parse(bad).is_err(), "{bad}");
        }
    }
}
