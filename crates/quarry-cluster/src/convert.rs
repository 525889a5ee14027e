//! Between the leaf API's messages and quarry-query's leaf types: the same fields, typed as
//! protobuf has them.

use crate::proto;
use crate::ClusterError;
use quarry_format::Value;
use quarry_query::agg_tree::TreePartial;
use quarry_query::aggregation::{AggPartial, AggSpec};
use quarry_query::bm25::FieldStats;
use quarry_query::cursor::Cursor;
use quarry_query::field_sort::{FieldSort, SortCursor, SortKey, SortValue};
use quarry_query::leaf::{
    FailedBlock, LeafAnswer, LeafQuery, LeafRequest, PartialHit, QuerySource, TimeSpan,
};
use quarry_query::weight::GlobalStats;
use quarry_query::SortOrder;
use tonic::Status;

pub fn query_to_proto(tenant: &str, query: &LeafQuery) -> proto::Query {
    let (source, now) = match &query.source {
        QuerySource::Text(text) => (proto::query::Source::Text(text.clone()), 0),
        QuerySource::Dsl { query, now } => (proto::query::Source::DslJson(query.to_string()), *now),
    };
    proto::Query {
        tenant: tenant.to_owned(),
        source: Some(source),
        now,
        start: query.start,
        end: query.end,
    }
}

/// The tenant and the query of a request.
pub fn query_from_proto(query: Option<proto::Query>) -> Result<(String, LeafQuery), Status> {
    let query = query.ok_or_else(|| Status::invalid_argument("no query"))?;
    let source = match query.source {
        Some(proto::query::Source::Text(text)) => QuerySource::Text(text),
        Some(proto::query::Source::DslJson(json)) => QuerySource::Dsl {
            query: serde_json::from_str(&json)
                .map_err(|e| Status::invalid_argument(format!("query DSL: {e}")))?,
            now: query.now,
        },
        None => return Err(Status::invalid_argument("a query has no source")),
    };
    Ok((
        query.tenant,
        LeafQuery {
            source,
            start: query.start,
            end: query.end,
        },
    ))
}

pub fn stats_to_proto(stats: &GlobalStats) -> proto::Stats {
    let term_docs =
        |map: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>| {
            map.iter()
                .flat_map(|(field, terms)| {
                    terms.iter().map(move |(term, &docs)| proto::TermDocs {
                        field: field.clone(),
                        term: term.clone(),
                        docs,
                    })
                })
                .collect()
        };
    proto::Stats {
        fields: stats
            .fields
            .iter()
            .map(|(field, s)| proto::FieldStats {
                field: field.clone(),
                docs_with_field: s.docs_with_field,
                total_tokens: s.total_tokens,
            })
            .collect(),
        doc_freqs: term_docs(&stats.doc_freqs),
        exact_freqs: term_docs(&stats.exact_freqs),
        exact_docs: stats
            .exact_docs
            .iter()
            .map(|(field, &docs)| proto::FieldDocs {
                field: field.clone(),
                docs,
            })
            .collect(),
    }
}

pub fn stats_from_proto(stats: proto::Stats) -> GlobalStats {
    let mut global = GlobalStats::default();
    for f in stats.fields {
        global.fields.insert(
            f.field,
            FieldStats {
                docs_with_field: f.docs_with_field,
                total_tokens: f.total_tokens,
            },
        );
    }
    for t in stats.doc_freqs {
        global
            .doc_freqs
            .entry(t.field)
            .or_default()
            .insert(t.term, t.docs);
    }
    for t in stats.exact_freqs {
        global
            .exact_freqs
            .entry(t.field)
            .or_default()
            .insert(t.term, t.docs);
    }
    for f in stats.exact_docs {
        global.exact_docs.insert(f.field, f.docs);
    }
    global
}

pub fn sort_to_proto(sort: SortOrder) -> proto::Sort {
    match sort {
        SortOrder::Relevance => proto::Sort::Relevance,
        SortOrder::TimeDesc => proto::Sort::TimeDesc,
        SortOrder::TimeAsc => proto::Sort::TimeAsc,
    }
}

pub fn sort_from_proto(sort: i32) -> Result<SortOrder, Status> {
    match proto::Sort::try_from(sort) {
        Ok(proto::Sort::Relevance) => Ok(SortOrder::Relevance),
        Ok(proto::Sort::TimeDesc) => Ok(SortOrder::TimeDesc),
        Ok(proto::Sort::TimeAsc) => Ok(SortOrder::TimeAsc),
        Err(_) => Err(Status::invalid_argument(format!("unknown sort {sort}"))),
    }
}

/// The request as a leaf is asked it; an error for a tree that cannot travel (its top hits,
/// or a filter not written in the DSL).
pub fn request_to_proto(
    tenant: &str,
    query: &LeafQuery,
    request: &LeafRequest,
    stats: Option<&GlobalStats>,
) -> Result<proto::SearchRequest, ClusterError> {
    let tree = match request.tree.is_empty() {
        true => String::new(),
        false => serde_json::to_string(&request.tree)
            .map_err(|e| ClusterError::Request(format!("aggregations: {e}")))?,
    };
    Ok(proto::SearchRequest {
        query: Some(query_to_proto(tenant, query)),
        limit: u32::try_from(request.limit).unwrap_or(u32::MAX),
        sort: sort_to_proto(request.sort) as i32,
        after: request.after.map(|c| proto::Cursor {
            time: c.time,
            block: c.block_id,
            doc: c.doc,
        }),
        count: request.count,
        histogram: request.histogram,
        stats: stats.map(stats_to_proto),
        aggregations: request
            .aggregations
            .iter()
            .map(|a| a.name.clone())
            .collect(),
        sort_fields: request
            .sort_field
            .iter()
            .flat_map(|sort| &sort.keys)
            .map(|key| proto::SortKey {
                field: key.field.clone(),
                descending: key.descending,
            })
            .collect(),
        sort_after: request.sort_after.as_ref().map(|c| proto::SortCursor {
            values: c.values.iter().map(sort_value_to_proto).collect(),
            time: c.time,
            block: c.block_id,
            doc: c.doc,
        }),
        scope: None,
        tree,
        keep_ms: 0,
    })
}

fn sort_value_to_proto(value: &SortValue) -> proto::SortValue {
    use proto::sort_value::Value as V;
    proto::SortValue {
        value: Some(match value {
            SortValue::Number(v) => V::Number(*v),
            SortValue::Str(s) => V::Str(s.clone()),
            SortValue::Missing => V::Missing(true),
        }),
    }
}

fn sort_value_from_proto(value: &proto::SortValue) -> SortValue {
    use proto::sort_value::Value as V;
    match &value.value {
        Some(V::Number(v)) => SortValue::Number(*v),
        Some(V::Str(s)) => SortValue::Str(s.clone()),
        Some(V::Missing(_)) | None => SortValue::Missing,
    }
}

pub fn span_to_proto(span: TimeSpan) -> proto::SpanReply {
    match span {
        TimeSpan::Bounded(width) => proto::SpanReply {
            bounded: Some(width),
            ..Default::default()
        },
        TimeSpan::Matches(edges) => proto::SpanReply {
            bounded: None,
            oldest: edges.map(|e| e.0),
            newest: edges.map(|e| e.1),
        },
    }
}

pub fn span_from_proto(reply: &proto::SpanReply) -> TimeSpan {
    match reply.bounded {
        Some(width) => TimeSpan::Bounded(width),
        None => TimeSpan::Matches(reply.oldest.zip(reply.newest)),
    }
}

pub fn request_from_proto(request: &proto::SearchRequest) -> Result<LeafRequest, Status> {
    Ok(LeafRequest {
        limit: request.limit as usize,
        sort: sort_from_proto(request.sort)?,
        after: request.after.map(|c| Cursor {
            time: c.time,
            block_id: c.block,
            doc: c.doc,
        }),
        count: request.count,
        histogram: request.histogram,
        aggregations: request
            .aggregations
            .iter()
            .map(|text| AggSpec::parse(text).map_err(Status::invalid_argument))
            .collect::<Result<_, _>>()?,
        tree: match request.tree.is_empty() {
            true => Vec::new(),
            false => serde_json::from_str(&request.tree)
                .map_err(|e| Status::invalid_argument(format!("aggregations: {e}")))?,
        },
        sort_field: (!request.sort_fields.is_empty()).then(|| FieldSort {
            keys: request
                .sort_fields
                .iter()
                .map(|key| SortKey {
                    field: key.field.clone(),
                    descending: key.descending,
                })
                .collect(),
        }),
        sort_after: request.sort_after.as_ref().map(|c| SortCursor {
            values: c.values.iter().map(sort_value_from_proto).collect(),
            time: c.time,
            block_id: c.block,
            doc: c.doc,
        }),
    })
}

pub fn hit_to_proto(hit: &PartialHit) -> proto::Hit {
    proto::Hit {
        time: hit.time,
        block: hit.block,
        doc: hit.doc,
        score: hit.score,
        block_start: hit.block_start,
        sort_values: hit
            .sort_values
            .iter()
            .flatten()
            .map(sort_value_to_proto)
            .collect(),
    }
}

/// A hit as a leaf sent it; `field_sort`: whether the request sorted by fields (its hits then
/// carry sort values, maybe none for a sort of no keys).
pub fn hit_from_proto(hit: &proto::Hit, field_sort: bool) -> PartialHit {
    PartialHit {
        time: hit.time,
        block: hit.block,
        doc: hit.doc,
        score: hit.score,
        block_start: hit.block_start,
        sort_values: field_sort
            .then(|| hit.sort_values.iter().map(sort_value_from_proto).collect()),
    }
}

pub fn answer_to_proto(answer: &LeafAnswer, snapshot: u64) -> Result<proto::SearchReply, Status> {
    Ok(proto::SearchReply {
        hits: answer.hits.iter().map(hit_to_proto).collect(),
        count: answer.count,
        has_histogram: answer.histogram.is_some(),
        histogram: answer
            .histogram
            .iter()
            .flatten()
            .map(|&(start, count)| proto::Bucket { start, count })
            .collect(),
        failed: answer.failed.iter().map(failed_to_proto).collect(),
        snapshot,
        aggregations: answer.aggregations.as_ref().map(AggPartial::to_bytes),
        tree: answer
            .tree
            .as_ref()
            .map(TreePartial::to_bytes)
            .transpose()
            .map_err(|e| Status::invalid_argument(e.to_string()))?,
    })
}

pub fn failed_to_proto(failed: &FailedBlock) -> proto::FailedBlock {
    proto::FailedBlock {
        block: failed.block,
        location: failed.location.clone(),
        error: failed.error.clone(),
        unreadable: failed.unreadable,
    }
}

pub fn failed_from_proto(failed: &proto::FailedBlock) -> FailedBlock {
    FailedBlock {
        block: failed.block,
        location: failed.location.clone(),
        error: failed.error.clone(),
        unreadable: failed.unreadable,
    }
}

/// A leaf's field summary.
pub fn fields_to_proto(
    fields: &std::collections::BTreeMap<String, quarry_query::FieldSummary>,
    failed: &[FailedBlock],
) -> proto::FieldsReply {
    proto::FieldsReply {
        fields: fields
            .iter()
            .map(|(name, summary)| proto::FieldTypes {
                name: name.clone(),
                types: summary.types.clone().into_iter().collect(),
                full_text: summary.full_text,
            })
            .collect(),
        failed: failed.iter().map(failed_to_proto).collect(),
        docs: 0,
        bytes: 0,
    }
}

/// A leaf's answer to `request` (its aggregation states checked against the request's).
pub fn answer_from_proto(
    reply: &proto::SearchReply,
    request: &LeafRequest,
) -> Result<LeafAnswer, String> {
    let field_sort = request.sort_field.is_some();
    Ok(LeafAnswer {
        hits: reply
            .hits
            .iter()
            .map(|hit| hit_from_proto(hit, field_sort))
            .collect(),
        count: reply.count,
        histogram: reply
            .has_histogram
            .then(|| reply.histogram.iter().map(|b| (b.start, b.count)).collect()),
        failed: reply.failed.iter().map(failed_from_proto).collect(),
        aggregations: match &reply.aggregations {
            Some(bytes) => Some(
                AggPartial::from_bytes(bytes, &request.aggregations).map_err(|e| e.to_string())?,
            ),
            None => None,
        },
        tree: match &reply.tree {
            Some(bytes) => {
                Some(TreePartial::from_bytes(bytes, &request.tree).map_err(|e| e.to_string())?)
            }
            None => None,
        },
    })
}

pub fn event_to_proto(event: &[(String, Value)]) -> proto::Event {
    use proto::field::Value as V;
    proto::Event {
        fields: event
            .iter()
            .map(|(name, value)| proto::Field {
                name: name.clone(),
                value: Some(match value {
                    Value::Str(s) => V::Str(s.clone()),
                    Value::I64(v) => V::I64(*v),
                    Value::U64(v) => V::U64(*v),
                    Value::F64(v) => V::F64(*v),
                    Value::Bool(v) => V::Bool(*v),
                    Value::Timestamp(v) => V::Timestamp(*v),
                    Value::Json(s) => V::Json(s.clone()),
                }),
            })
            .collect(),
    }
}

pub fn event_from_proto(event: proto::Event) -> Result<Vec<(String, Value)>, String> {
    use proto::field::Value as V;
    event
        .fields
        .into_iter()
        .map(|field| {
            let value = match field.value {
                Some(V::Str(s)) => Value::Str(s),
                Some(V::I64(v)) => Value::I64(v),
                Some(V::U64(v)) => Value::U64(v),
                Some(V::F64(v)) => Value::F64(v),
                Some(V::Bool(v)) => Value::Bool(v),
                Some(V::Timestamp(v)) => Value::Timestamp(v),
                Some(V::Json(s)) => Value::Json(s),
                None => return Err(format!("field {:?} has no value", field.name)),
            };
            Ok((field.name, value))
        })
        .collect()
}
