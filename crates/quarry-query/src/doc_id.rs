//! Document ids (the Elasticsearch API's `_id`). An event whose client gave an `_id` keeps it (the
//! event's `_id` field). Any other event's id is its content's: its time and a hash of its
//! stored fields (names and values, in any order), 16 bytes as 22 characters of base64url.
//! `_bulk` computes it from the parsed event when it answers, and a search from the event it
//! read, so the id a client was given is the id its hits show, for as long as the event lives
//! (events never change), and a lookup by id reads only that nanosecond (the time index) and
//! keeps the events whose hash matches (`Query::ContentId`). Nothing is stored for it: ids
//! cost no space.
//!
//! Two events with the same time and the same fields are the same document sent twice; they
//! share an id.

use base64::Engine as _;
use quarry_format::Value;
use quarry_store::mapping::{IGNORED_FIELD, TIME_AS_SENT_FIELD};

/// The field holding the `_id` a client gave.
pub const ID_FIELD: &str = "_id";

/// An event's id: the `_id` its client gave, else its content's.
pub fn id_of(time: i64, fields: &[(String, Value)]) -> String {
    match fields.iter().find(|(name, _)| name == ID_FIELD) {
        Some((_, Value::Str(id))) => id.clone(),
        _ => content_id(
            time,
            fields.iter().map(|(name, value)| (name.as_str(), value)),
        ),
    }
}

/// The content id of an event at `time` (ns) with `fields` (the stored ones).
pub fn content_id<'a>(time: i64, fields: impl Iterator<Item = (&'a str, &'a Value)>) -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&time.to_be_bytes());
    bytes[8..].copy_from_slice(&fields_hash(fields).to_be_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The time and fields hash a content id holds, or None if `id` is not one.
pub fn parse_content_id(id: &str) -> Option<(i64, u64)> {
    if id.len() != 22 {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(id)
        .ok()?;
    let time = i64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
    let hash = u64::from_be_bytes(bytes.get(8..16)?.try_into().ok()?);
    Some((time, hash))
}

/// Fields indexing or the Elasticsearch API add beside a document's own, left out of its
/// content id: `_ignored`, and how the document gave its time (quarry-server's live.rs).
const ADDED_FIELDS: [&str; 2] = [IGNORED_FIELD, TIME_AS_SENT_FIELD];

/// A hash of the fields that does not depend on their order: the sum of one hash per field
/// (name, value type and value). Fields indexing adds (`ADDED_FIELDS`) are left out.
pub fn fields_hash<'a>(fields: impl Iterator<Item = (&'a str, &'a Value)>) -> u64 {
    let mut buffer = Vec::new();
    let mut sum = 0u64;
    for (name, value) in fields.filter(|(name, _)| !ADDED_FIELDS.contains(name)) {
        buffer.clear();
        buffer.extend_from_slice(name.as_bytes());
        buffer.push(0xff);
        match value {
            Value::Str(text) => {
                buffer.push(1);
                buffer.extend_from_slice(text.as_bytes());
            }
            Value::I64(n) => {
                buffer.push(2);
                buffer.extend_from_slice(&n.to_le_bytes());
            }
            Value::U64(n) => {
                buffer.push(3);
                buffer.extend_from_slice(&n.to_le_bytes());
            }
            Value::F64(n) => {
                buffer.push(4);
                buffer.extend_from_slice(&n.to_bits().to_le_bytes());
            }
            Value::Bool(b) => {
                buffer.push(5);
                buffer.push(u8::from(*b));
            }
            Value::Timestamp(nanos) => {
                buffer.push(6);
                buffer.extend_from_slice(&nanos.to_le_bytes());
            }
            Value::Json(text) => {
                buffer.push(7);
                buffer.extend_from_slice(text.as_bytes());
            }
        }
        sum = sum.wrapping_add(xxhash_rust::xxh3::xxh3_64(&buffer));
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect()
    }

    fn id_of(time: i64, fields: &[(String, Value)]) -> String {
        content_id(time, fields.iter().map(|(n, v)| (n.as_str(), v)))
    }

    #[test]
    fn content_ids_depend_on_time_and_fields_not_their_order() {
        let a = fields(&[("host", Value::Str("web-1".into())), ("n", Value::I64(5))]);
        let b = fields(&[("n", Value::I64(5)), ("host", Value::Str("web-1".into()))]);
        let id = id_of(7, &a);
        assert_eq!(id.len(), 22);
        assert_eq!(id, id_of(7, &b), "field order does not matter");
        assert_ne!(id, id_of(8, &a), "nor does time not");
        for other in [
            fields(&[("host", Value::Str("web-2".into())), ("n", Value::I64(5))]),
            fields(&[("host", Value::Str("web-1".into())), ("n", Value::U64(5))]),
            fields(&[("host", Value::Str("web-1".into())), ("m", Value::I64(5))]),
            fields(&[("host", Value::Str("web-1".into()))]),
            // A name and value that run together differently.
            fields(&[("hos", Value::Str("tweb-1".into())), ("n", Value::I64(5))]),
        ] {
            assert_ne!(id, id_of(7, &other), "{other:?}");
        }
        assert_eq!(
            parse_content_id(&id),
            Some((7, fields_hash(a.iter().map(|(n, v)| (n.as_str(), v)))))
        );
        assert_eq!(parse_content_id("client-given-id"), None);
        assert_eq!(parse_content_id("!!!!!!!!!!!!!!!!!!!!!!"), None);
    }
}
