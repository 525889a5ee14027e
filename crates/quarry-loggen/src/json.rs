//! Writing an event as one JSON object by hand: a few `extend_from_slice` calls per field are
//! several times faster than building a `serde_json::Value`, and the tests parse every line
//! with serde_json to keep this honest.

use crate::Event;

/// Appends `event` as a JSON object, without a newline.
pub(crate) fn write_event(event: &Event<'_>, out: &mut Vec<u8>) {
    let mut number = itoa::Buffer::new();
    out.extend_from_slice(b"{\"_time\":\"");
    push_rfc3339_millis(event.time_ms, out);
    out.extend_from_slice(b"\",\"tenant\":\"tenant-");
    push_padded(u64::from(event.tenant), 4, out);
    out.extend_from_slice(b"\",\"service\":\"");
    push_json_string_content(event.service, out);
    out.extend_from_slice(b"\",\"host\":\"host-");
    push_padded(u64::from(event.host), 3, out);
    out.extend_from_slice(b"\",\"level\":\"");
    out.extend_from_slice(event.level.as_str().as_bytes());
    out.extend_from_slice(b"\",\"message\":\"");
    push_json_string_content(event.message, out);
    out.push(b'"');
    if let Some(request) = &event.request {
        out.extend_from_slice(b",\"method\":\"");
        push_json_string_content(request.method, out);
        out.extend_from_slice(b"\",\"path\":\"");
        push_json_string_content(request.path, out);
        out.extend_from_slice(b"\",\"status\":");
        out.extend_from_slice(number.format(request.status).as_bytes());
        out.extend_from_slice(b",\"latency_ms\":");
        out.extend_from_slice(number.format(request.latency_ms).as_bytes());
        out.extend_from_slice(b",\"bytes\":");
        out.extend_from_slice(number.format(request.bytes).as_bytes());
        out.extend_from_slice(b",\"client_ip\":\"");
        for (i, octet) in request.client_ip.iter().enumerate() {
            if i > 0 {
                out.push(b'.');
            }
            out.extend_from_slice(number.format(*octet).as_bytes());
        }
        out.push(b'"');
    }
    out.push(b'}');
}

/// `value` in decimal, left-padded with zeros to at least `width` digits.
fn push_padded(value: u64, width: usize, out: &mut Vec<u8>) {
    let mut number = itoa::Buffer::new();
    let digits = number.format(value).as_bytes();
    out.extend(std::iter::repeat_n(
        b'0',
        width.saturating_sub(digits.len()),
    ));
    out.extend_from_slice(digits);
}

/// The inside of a JSON string: `"`, `\` and control characters escaped, everything else
/// (valid UTF-8, since it comes from a `&str`) copied.
pub(crate) fn push_json_string_content(text: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    let mut copied = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let short: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[copied..i]);
        if short.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0xf)]);
        } else {
            out.extend_from_slice(short);
        }
        copied = i + 1;
    }
    out.extend_from_slice(&bytes[copied..]);
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for ms since the epoch; the caller keeps the year in 0..=9999
/// (the config checks the range).
pub fn push_rfc3339_millis(time_ms: i64, out: &mut Vec<u8>) {
    let days = time_ms.div_euclid(86_400_000);
    let ms_of_day = time_ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let fields: [(i64, usize, u8); 7] = [
        (year, 4, b'-'),
        (month, 2, b'-'),
        (day, 2, b'T'),
        (ms_of_day / 3_600_000, 2, b':'),
        (ms_of_day / 60_000 % 60, 2, b':'),
        (ms_of_day / 1000 % 60, 2, b'.'),
        (ms_of_day % 1000, 3, b'Z'),
    ];
    for (value, width, separator) in fields {
        push_padded(value as u64, width, out);
        out.push(separator);
    }
}

/// Proleptic Gregorian (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, https://howardhinnant.github.io/date_algorithms.html).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(ms: i64) -> String {
        let mut out = Vec::new();
        push_rfc3339_millis(ms, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rfc3339_millis() {
        for (ms, text) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (1_793_491_200_000, "2026-11-01T00:00:00.000Z"),
            (1_793_520_902_117, "2026-11-01T08:15:02.117Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ] {
            assert_eq!(time(ms), text, "{ms}");
        }
    }

    #[test]
    fn escaping_round_trips() {
        for text in [
            "plain",
            "a \"quoted\" \\path\\",
            "tab\tnew\nline\r\u{1}\u{1f}",
            "é ü 日本",
        ] {
            let mut out = b"\"".to_vec();
            push_json_string_content(text, &mut out);
            out.push(b'"');
            let parsed: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(parsed, text);
        }
    }
}
