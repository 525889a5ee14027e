//! The Elasticsearch `_bulk` body (NDJSON: an action line, then the document) turned into tantivy
//! documents, and the reply Elasticsearch would give.
//!
//! Only `index` and `create` actions are taken (their metadata, `_index` and `_id`, is ignored:
//! one index, ids are not kept); any other action, or a document that is not a JSON object with
//! an RFC 3339 `_time` (or `@timestamp`) when it has one, makes that item fail with status 400
//! while the rest of the request is indexed, as Elasticsearch does.

use std::borrow::Cow;
use std::fmt::Write;

use logs_driver::time::parse_rfc3339_millis;
use serde::Deserialize;
use tantivy::{DateTime, TantivyDocument};

use crate::schema::Fields;

/// One event: the schema's fields, strings borrowed from the body unless they hold escapes;
/// other fields are only kept in `_source`.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "_time", alias = "@timestamp", borrow)]
    time: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tenant: Option<Cow<'a, str>>,
    #[serde(borrow)]
    service: Option<Cow<'a, str>>,
    #[serde(borrow)]
    host: Option<Cow<'a, str>>,
    #[serde(borrow)]
    level: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    path: Option<Cow<'a, str>>,
    status: Option<i64>,
    latency_ms: Option<i64>,
    bytes: Option<i64>,
    #[serde(borrow)]
    client_ip: Option<Cow<'a, str>>,
    #[serde(borrow)]
    marker: Option<Cow<'a, str>>,
}

/// The outcome of one item of the request, in order.
pub enum Item {
    Document(TantivyDocument),
    Failed(String),
}

/// The items of a bulk body, in order; a body that ends after an action line has a failed
/// item for it.
pub fn parse(body: &[u8], fields: &Fields) -> Vec<Item> {
    let mut items = Vec::new();
    let mut lines = body
        .split(|&byte| byte == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace));
    while let Some(action) = lines.next() {
        if let Err(reason) = check_action(action) {
            items.push(Item::Failed(reason));
            // An unknown action may or may not carry a document: Elasticsearch rejects the
            // whole request; here the next line is read as the next action.
            continue;
        }
        items.push(match lines.next() {
            Some(line) => match document(line, fields) {
                Ok(document) => Item::Document(document),
                Err(reason) => Item::Failed(reason),
            },
            None => Item::Failed("the body ends after an action line".to_owned()),
        });
    }
    items
}

fn check_action(line: &[u8]) -> Result<(), String> {
    let action: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(line).map_err(|error| format!("malformed action line: {error}"))?;
    match action.keys().next().map(String::as_str) {
        Some("index" | "create") if action.len() == 1 => Ok(()),
        _ => Err(format!(
            "unsupported action line {}: only index and create are",
            String::from_utf8_lossy(line)
        )),
    }
}

fn document(line: &[u8], fields: &Fields) -> Result<TantivyDocument, String> {
    let source = std::str::from_utf8(line).map_err(|error| format!("not UTF-8: {error}"))?;
    let event: Event =
        serde_json::from_str(source).map_err(|error| format!("malformed document: {error}"))?;
    let mut document = TantivyDocument::new();
    if let Some(time) = &event.time {
        let millis = parse_rfc3339_millis(time)
            .ok_or_else(|| format!("_time {time:?} is not an RFC 3339 timestamp"))?;
        document.add_date(fields.time, DateTime::from_timestamp_millis(millis));
    }
    let keywords = [
        event.tenant,
        event.service,
        event.host,
        event.level,
        event.method,
        event.client_ip,
    ];
    for (field, value) in fields.keywords.iter().zip(keywords) {
        if let Some(value) = value {
            document.add_text(*field, value);
        }
    }
    for (field, value) in [(fields.message, event.message), (fields.path, event.path)] {
        if let Some(value) = value {
            document.add_text(field, value);
        }
    }
    let integers = [event.status, event.latency_ms, event.bytes];
    for (field, value) in fields.integers.iter().zip(integers) {
        if let Some(value) = value {
            document.add_i64(*field, value);
        }
    }
    if let Some(marker) = event.marker {
        document.add_text(fields.marker, marker);
    }
    document.add_text(fields.source, source);
    Ok(document)
}

/// Elasticsearch's reply, every item in full as Elasticsearch writes it (the driver reads the
/// same bytes from every engine): `{"took":MS,"errors":BOOL,"items":[{"index":{"_index":
/// "default","_id":ID,"_version":1,"result":"created","_shards":{…},"_seq_no":N,
/// "_primary_term":1,"status":201}},…]}`, a failed item `{"index":{"_index":"default",
/// "_id":null,"status":400,"error":{"type":…,"reason":…}}}`. Ids are `id_prefix-N`; sequence
/// numbers count from `first_seq_no`.
pub fn reply(
    statuses: &[Result<(), String>],
    took_ms: u128,
    id_prefix: &str,
    first_seq_no: u64,
) -> String {
    let errors = statuses.iter().any(Result::is_err);
    let mut out = String::with_capacity(40 + statuses.len() * 220);
    let _ = write!(out, r#"{{"took":{took_ms},"errors":{errors},"items":["#);
    let mut seq_no = first_seq_no;
    for (position, status) in statuses.iter().enumerate() {
        if position > 0 {
            out.push(',');
        }
        match status {
            Ok(()) => {
                let _ = write!(
                    out,
                    r#"{{"index":{{"_index":"default","_id":"{id_prefix}-{position}","_version":1,"result":"created","_shards":{{"total":1,"successful":1,"failed":0}},"_seq_no":{seq_no},"_primary_term":1,"status":201}}}}"#
                );
                seq_no += 1;
            }
            Err(reason) => {
                let reason = serde_json::Value::String(reason.clone());
                let _ = write!(
                    out,
                    r#"{{"index":{{"_index":"default","_id":null,"status":400,"error":{{"type":"mapper_parsing_exception","reason":{reason}}}}}}}"#
                );
            }
        }
    }
    out.push_str("]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema;

    fn fields() -> Fields {
        Fields::of(&schema::build()).unwrap()
    }

    fn outcomes(body: &str) -> Vec<Result<(), String>> {
        parse(body.as_bytes(), &fields())
            .into_iter()
            .map(|item| match item {
                Item::Document(_) => Ok(()),
                Item::Failed(reason) => Err(reason),
            })
            .collect()
    }

    #[test]
    fn reads_index_and_create_pairs() {
        let body = concat!(
            "{\"index\":{\"_index\":\"default\"}}\n",
            "{\"_time\":\"2026-11-01T00:00:00.000Z\",\"service\":\"nginx\",\"status\":503}\n",
            "\n",
            "{\"create\":{}}\r\n",
            "{\"@timestamp\":\"2026-11-01T00:00:01Z\",\"marker\":\"m1\",\"extra\":[1,2]}\r\n",
        );
        assert_eq!(outcomes(body), [Ok(()), Ok(())]);
    }

    #[test]
    fn failed_items_do_not_stop_the_request() {
        let body = concat!(
            "{\"index\":{}}\n",
            "{\"_time\":\"yesterday\"}\n",
            "{\"delete\":{\"_id\":\"1\"}}\n",
            "{\"index\":{}}\n",
            "not json\n",
            "{\"index\":{}}\n",
            "{\"message\":\"ok\"}\n",
            "{\"index\":{}}\n",
        );
        let got = outcomes(body);
        assert_eq!(got.len(), 5);
        assert!(got[0].as_ref().unwrap_err().contains("RFC 3339"));
        assert!(got[1].as_ref().unwrap_err().contains("unsupported action"));
        assert!(got[2].as_ref().unwrap_err().contains("malformed document"));
        assert_eq!(got[3], Ok(()));
        assert!(got[4]
            .as_ref()
            .unwrap_err()
            .contains("ends after an action"));
    }

    #[test]
    fn replies_like_elasticsearch() {
        let reply = reply(&[Ok(()), Err("bad \"x\"".to_owned())], 7, "ab", 5);
        let value: serde_json::Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(value["took"], 7);
        assert_eq!(value["errors"], true);
        assert_eq!(value["items"][0]["index"]["status"], 201);
        assert_eq!(value["items"][0]["index"]["_id"], "ab-0");
        assert_eq!(value["items"][0]["index"]["_seq_no"], 5);
        assert_eq!(value["items"][0]["index"]["_shards"]["successful"], 1);
        assert_eq!(value["items"][1]["index"]["error"]["reason"], "bad \"x\"");
    }
}
