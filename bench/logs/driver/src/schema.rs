//! The fields of a generated event (PROTOCOL.md, "Events") and the kind each is indexed as.
//!
//! Every engine indexes the same field the same way: a keyword is one lowercased term (and a
//! column for TERMS), a text field is analyzed into lowercase words, an integer is a point/fast
//! field, `_time` is milliseconds since the epoch and the index sort key.

/// How a field is indexed, which decides what a query clause on it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// `_time`: milliseconds since the epoch; equality and ranges, sort key.
    Time,
    /// One lowercased term per event: `field:value` is equality.
    Keyword,
    /// Analyzed into words: `field:value` means the field holds the word.
    Text,
    /// A 64-bit integer: equality and ranges.
    Integer,
}

pub const TIME: &str = "_time";

/// The text field a bare word searches.
pub const DEFAULT_TEXT_FIELD: &str = "message";

/// Every field of the schema, in the order of PROTOCOL.md's tables.
pub const FIELDS: &[(&str, FieldKind)] = &[
    (TIME, FieldKind::Time),
    ("tenant", FieldKind::Keyword),
    ("service", FieldKind::Keyword),
    ("host", FieldKind::Keyword),
    ("level", FieldKind::Keyword),
    ("message", FieldKind::Text),
    ("method", FieldKind::Keyword),
    ("path", FieldKind::Text),
    ("status", FieldKind::Integer),
    ("latency_ms", FieldKind::Integer),
    ("bytes", FieldKind::Integer),
    ("client_ip", FieldKind::Keyword),
];

/// The kind of a field of the schema, `None` for a name that is not one.
pub fn field_kind(name: &str) -> Option<FieldKind> {
    FIELDS
        .iter()
        .find(|(field, _)| *field == name)
        .map(|(_, kind)| *kind)
}

/// The fields of one kind, in schema order.
pub fn fields_of(kind: FieldKind) -> impl Iterator<Item = &'static str> {
    FIELDS
        .iter()
        .filter(move |(_, field_kind)| *field_kind == kind)
        .map(|(name, _)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_every_field() {
        assert_eq!(field_kind("_time"), Some(FieldKind::Time));
        assert_eq!(field_kind("client_ip"), Some(FieldKind::Keyword));
        assert_eq!(field_kind("path"), Some(FieldKind::Text));
        assert_eq!(field_kind("latency_ms"), Some(FieldKind::Integer));
        assert_eq!(field_kind("Service"), None);
        assert_eq!(
            fields_of(FieldKind::Integer).collect::<Vec<_>>(),
            ["status", "latency_ms", "bytes"]
        );
        assert_eq!(fields_of(FieldKind::Keyword).count(), 6);
    }
}
