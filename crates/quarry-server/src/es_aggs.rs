//! Elasticsearch's `aggs`: the request's tree of aggregations translated once into Quarry's
//! aggregation tree (`quarry_query::agg_tree`), evaluated in one pass with the search, and its
//! answer rendered in Elasticsearch's shape.
//!
//! - Buckets: `terms` (`size`, `order` by `_count`, `_key` or a metric below, `min_doc_count`,
//!   `missing`, `include`/`exclude` as a pattern, a list or a partition), `multi_terms`,
//!   `rare_terms`, `composite` (es_composite.rs), `histogram` (`order`, a number `format`),
//!   `date_histogram` (fixed and calendar intervals, `time_zone`, `offset`, `format`,
//!   `order`, `min_doc_count`, `extended_bounds`, `keyed`), `range` and `date_range`,
//!   `filters` (named or a list, `other_bucket`), `filter` and `missing`.
//! - Metrics: `avg`, `min`, `max`, `sum`, `stats`, `extended_stats`, `value_count`,
//!   `cardinality`, `percentiles` (numbers or their text, `keyed`, t-digest or `hdr`),
//!   `median_absolute_deviation`, `weighted_avg`, `top_hits` and `top_metrics`. Metrics of
//!   `@timestamp` are in milliseconds with the time as text beside them, as a date field's are.
//! - Pipelines over a parent's buckets (`derivative`, `cumulative_sum`, `serial_diff`,
//!   `moving_avg`, `moving_fn` with `MovingFunctions`' built-in functions, `bucket_script`
//!   with arithmetic over its `params`) and over a sibling's buckets (`avg_bucket`,
//!   `max_bucket`, `min_bucket`, `sum_bucket`), computed from the rendered buckets.
//!
//! Every option Quarry does not honour is refused by name (`check_options`); choosing,
//! ordering and cutting buckets, empty buckets and pipelines are done here, over every bucket
//! the tree returned.

use crate::es_number_format::DecimalFormat;
use crate::ApiError;
use quarry_query::agg_tree::{
    AggNode, AggResult, BucketKey, BucketResult, CalendarUnit, FilterQuery, Metric, MetricResult,
    NodeKind, TermKey, TimeBuckets, TopHit,
};
use quarry_query::dsl;
use quarry_query::time::{parse_interval, parse_time_in, Rounding, Zone};
use quarry_query::Searcher;
use serde_json::{json, Map, Value as JsonValue};
use std::cmp::Ordering;

/// The most empty buckets a histogram adds between its first and last (or its
/// `extended_bounds`).
const MAX_FILLED_BUCKETS: usize = 10_000;

/// One level of aggregations: the tree's nodes and, beside each, how it is shown.
#[derive(Clone, Debug, Default)]
pub(crate) struct Level {
    nodes: Vec<AggNode>,
    aggs: Vec<EsAgg>,
    /// Computed from this level's answer after it is rendered (in the parent's buckets, or
    /// from a sibling's buckets).
    pipelines: Vec<Pipeline>,
}

#[derive(Clone, Debug)]
struct EsAgg {
    name: String,
    view: View,
    meta: Option<JsonValue>,
    /// The sub-aggregations (`node.children` are `sub.nodes`).
    sub: Level,
}

/// How an aggregation's answer is shown.
#[derive(Clone, Debug)]
enum View {
    /// Over `@timestamp` or a date field: milliseconds, with the time as text.
    Metric {
        kind: MetricKind,
        field: String,
    },
    Terms {
        size: usize,
        order: Vec<(OrderBy, bool)>,
        min_doc_count: u64,
        /// A date field's keys are shown in milliseconds with their text.
        field: String,
        /// `include` and `exclude`.
        keys: KeyFilter,
        /// `value_type: date`: keys are times, as a date field's are.
        date_keys: bool,
        /// `show_term_doc_count_error`: each bucket's error bound (0: counts are exact).
        show_error: bool,
    },
    MultiTerms {
        size: usize,
        order: Vec<(OrderBy, bool)>,
        min_doc_count: u64,
        fields: Vec<String>,
        show_error: bool,
    },
    /// `rare_terms`: every value in at most `max_doc_count` events, rarest first.
    RareTerms {
        max_doc_count: u64,
        field: String,
        keys: KeyFilter,
    },
    Histogram {
        interval: f64,
        offset: f64,
        min_doc_count: u64,
        bounds: Option<(f64, f64)>,
        keyed: bool,
        order: HistogramOrder,
        /// `format`: keys also as text in it (`key_as_string`).
        format: Option<DecimalFormat>,
    },
    DateHistogram {
        buckets: TimeBuckets,
        min_doc_count: u64,
        /// ns.
        bounds: Option<(i64, i64)>,
        format: DateFormat,
        zone: Zone,
        keyed: bool,
        order: HistogramOrder,
    },
    Range {
        ranges: Vec<RangeView>,
        keyed: bool,
        /// A date range: bounds in ns, shown in milliseconds and as text.
        dates: Option<(DateFormat, Zone)>,
    },
    Filters {
        /// Named filters, or (`None`) a list.
        names: Option<Vec<String>>,
        count: usize,
        other_key: Option<String>,
        keyed: bool,
    },
    /// `adjacency_matrix`: a bucket per filter and per pair of filters (both matching), the
    /// tree's `Filters` slot by slot; empty ones are left out, the rest shown in key order.
    Adjacency {
        keys: Vec<String>,
    },
    /// `filter` and `missing`: one bucket.
    Single {
        kind: &'static str,
    },
    /// `top_hits`: the hits after the first `from`, shown as `view` says. With `by` (a field
    /// and whether descending), the tree keeps up to `TOP_HITS_SORTED_MAX` hits per bucket in
    /// time order and they are sorted here by the field's values.
    TopHits {
        from: usize,
        size: usize,
        view: Box<crate::es_hits::HitView>,
        by: Option<(String, bool)>,
    },
    /// `top_metrics`: these fields of the top hits, with their times as sort values.
    TopMetrics {
        fields: Vec<String>,
    },
    Composite(Box<crate::es_composite::CompositeView>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum MetricKind {
    Avg,
    Min,
    Max,
    Sum,
    Stats,
    ExtendedStats { sigma: f64 },
    ValueCount,
    Cardinality,
    Percentiles { keyed: bool, hdr: bool },
    MedianAbsoluteDeviation,
    WeightedAvg,
}

impl MetricKind {
    fn type_name(self) -> &'static str {
        match self {
            MetricKind::Avg => "avg",
            MetricKind::Min => "min",
            MetricKind::Max => "max",
            MetricKind::Sum => "sum",
            MetricKind::Stats => "stats",
            MetricKind::ExtendedStats { .. } => "extended_stats",
            MetricKind::ValueCount => "value_count",
            MetricKind::Cardinality => "cardinality",
            MetricKind::Percentiles { hdr: true, .. } => "hdr_percentiles",
            MetricKind::Percentiles { .. } => "tdigest_percentiles",
            MetricKind::MedianAbsoluteDeviation => "median_absolute_deviation",
            MetricKind::WeightedAvg => "weighted_avg",
        }
    }

    /// Number metrics have no answer for strings.
    fn needs_numbers(self) -> bool {
        !matches!(self, MetricKind::ValueCount | MetricKind::Cardinality)
    }
}

#[derive(Clone, Debug, PartialEq)]
enum OrderBy {
    Count,
    Key,
    /// A path to a metric below (`avg_x`, `stats_x.max`, `pct[99]`).
    Path(String),
}

/// A histogram's bucket order: by key (the default, ascending) or by count, ties by key
/// ascending.
#[derive(Clone, Copy, Debug, Default)]
struct HistogramOrder {
    by_count: bool,
    descending: bool,
}

impl HistogramOrder {
    /// `order` of a (date) histogram: `{"_key": "desc"}`, `{"_count": "asc"}` (or a list of
    /// one); `_time` is `_key` in a date_histogram, as Elasticsearch 6 wrote it.
    fn parse(value: Option<&JsonValue>, dates: bool, path: &str) -> Result<Self, ApiError> {
        let Some(value) = value else {
            return Ok(HistogramOrder::default());
        };
        let order = terms_order(Some(value), path)?;
        match order[..] {
            [] => Ok(HistogramOrder::default()),
            [(ref by, descending)] => {
                let by_count = match by {
                    OrderBy::Count => true,
                    OrderBy::Key => false,
                    OrderBy::Path(p) if p == "_time" && dates => false,
                    OrderBy::Path(p) => {
                        return Err(bad(format!(
                            "unsupported: {path}.order by [{p}] (Quarry orders histograms by _key or _count)"
                        )))
                    }
                };
                Ok(HistogramOrder {
                    by_count,
                    descending,
                })
            }
            _ => Err(bad(format!(
                "unsupported: {path}.order with more than one key"
            ))),
        }
    }

    /// Puts `buckets` (rendered, in key order) in this order.
    fn apply(self, buckets: &mut [Map<String, JsonValue>]) {
        if self.by_count {
            let count = |b: &Map<String, JsonValue>| b["doc_count"].as_u64().unwrap_or(0);
            buckets.sort_by(|a, b| match self.descending {
                true => count(b).cmp(&count(a)),
                false => count(a).cmp(&count(b)),
            });
        } else if self.descending {
            buckets.reverse();
        }
    }
}

#[derive(Clone, Debug)]
struct RangeView {
    key: Option<String>,
    from: Option<f64>,
    to: Option<f64>,
}

#[derive(Clone, Debug)]
struct Pipeline {
    name: String,
    kind: PipelineKind,
    /// `buckets_path`: one path, or `bucket_script`'s named ones.
    paths: Vec<(String, String)>,
    /// `gap_policy: insert_zeros` (else missing values are skipped).
    insert_zeros: bool,
}

#[derive(Clone, Debug)]
enum PipelineKind {
    Derivative,
    CumulativeSum,
    SerialDiff {
        lag: usize,
    },
    MovingAvg {
        window: usize,
    },
    MovingFn {
        window: usize,
        shift: i64,
        function: MovingFunction,
    },
    BucketScript(Expr),
    /// `avg_bucket`, `max_bucket`, ... over a sibling's buckets.
    Sibling(SiblingKind),
}

#[derive(Clone, Copy, Debug)]
enum MovingFunction {
    Max,
    Min,
    Sum,
    UnweightedAvg,
    LinearWeightedAvg,
    StdDev,
}

#[derive(Clone, Copy, Debug)]
enum SiblingKind {
    Avg,
    Max,
    Min,
    Sum,
}

impl PipelineKind {
    fn type_name(&self) -> &'static str {
        match self {
            PipelineKind::Derivative => "derivative",
            PipelineKind::Sibling(SiblingKind::Max | SiblingKind::Min) => "bucket_metric_value",
            _ => "simple_value",
        }
    }
}

/// An aggregation's definition: its type, its body, its sub-aggregations and its `meta`
/// (given back as sent).
struct Parts<'a> {
    kind: &'a str,
    body: &'a JsonValue,
    sub: Option<&'a Map<String, JsonValue>>,
    meta: Option<&'a JsonValue>,
}

fn agg_parts<'a>(definition: &'a JsonValue, path: &str) -> Result<Parts<'a>, ApiError> {
    let object = definition
        .as_object()
        .ok_or_else(|| ApiError::bad_request(format!("{path}: expected an aggregation object")))?;
    let mut kind = None;
    let mut sub = None;
    let mut meta = None;
    for (key, value) in object {
        match key.as_str() {
            "aggs" | "aggregations" => {
                sub = Some(value.as_object().ok_or_else(|| {
                    ApiError::bad_request(format!("{path}.{key}: expected an object"))
                })?)
            }
            "meta" if value.is_object() => meta = Some(value),
            "meta" => return Err(bad(format!("{path}.meta: expected an object"))),
            other if kind.is_none() => kind = Some((other, value)),
            other => {
                return Err(ApiError::bad_request(format!(
                    "{path}: two aggregation types ([{}] and [{other}])",
                    kind.map_or("", |(k, _)| k)
                )))
            }
        }
    }
    let (kind, body) =
        kind.ok_or_else(|| ApiError::bad_request(format!("{path}: no aggregation type")))?;
    Ok(Parts {
        kind,
        body,
        sub,
        meta,
    })
}

pub(crate) fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request(message.into())
}

/// Reads a request's `aggs` object.
pub(crate) fn parse(
    object: &Map<String, JsonValue>,
    path: &str,
    now: i64,
) -> Result<Level, ApiError> {
    let mut level = Level::default();
    for (name, definition) in object {
        let path = format!("{path}.{name}");
        let Parts {
            kind,
            body,
            sub,
            meta,
        } = agg_parts(definition, &path)?;
        let here = format!("{path}.{kind}");
        if kind == "bucket_sort" && !path.contains(".aggs.") && !path.contains(".aggregations.") {
            return Err(bad(format!(
                "bucket_sort aggregation [{name}] must be declared inside of another aggregation"
            )));
        }
        if let Some(pipeline) = parse_pipeline(name, kind, body, &here)? {
            if sub.is_some() {
                return Err(bad(format!(
                    "{path}: a pipeline aggregation has no sub-aggregations"
                )));
            }
            level.pipelines.push(pipeline);
            continue;
        }
        check_options(kind, body, &here)?;
        let sub = match sub {
            Some(sub) => parse(sub, &format!("{path}.aggs"), now)?,
            None => Level::default(),
        };
        if let Some(child) = sub
            .aggs
            .iter()
            .find(|a| matches!(a.view, View::Composite(_)))
        {
            return Err(bad(format!(
                "{path}.aggs.{}: [composite] aggregation cannot be used with a parent aggregation of type: [{kind}]",
                child.name
            )));
        }
        let (kind, view) = node_of(kind, body, &here, now)?;
        let is_metric = matches!(
            view,
            View::Metric { .. } | View::TopHits { .. } | View::TopMetrics { .. }
        );
        if is_metric && !sub.nodes.is_empty() {
            return Err(bad(format!(
                "{path}: a metric aggregation has no sub-aggregations"
            )));
        }
        for pipeline in &sub.pipelines {
            let parent_only = matches!(
                pipeline.kind,
                PipelineKind::Derivative
                    | PipelineKind::CumulativeSum
                    | PipelineKind::SerialDiff { .. }
                    | PipelineKind::MovingAvg { .. }
                    | PipelineKind::MovingFn { .. }
            );
            let histogram = matches!(view, View::Histogram { .. } | View::DateHistogram { .. });
            if parent_only && !histogram {
                return Err(bad(format!(
                    "{path}.aggs.{}: this pipeline aggregation needs a histogram or date_histogram as its parent",
                    pipeline.name
                )));
            }
        }
        level.nodes.push(AggNode {
            kind,
            children: sub.nodes.clone(),
        });
        level.aggs.push(EsAgg {
            name: name.clone(),
            view,
            meta: meta.cloned(),
            sub,
        });
    }
    Ok(level)
}

impl Level {
    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.pipelines.is_empty()
    }

    /// The tree to evaluate.
    pub(crate) fn nodes(&self) -> &[AggNode] {
        &self.nodes
    }

    /// Refuses number metrics over a field that holds strings (Elasticsearch refuses them on
    /// text and keyword fields).
    pub(crate) fn check_fields(&self, searcher: &Searcher) -> Result<(), ApiError> {
        let summary = searcher.field_summary();
        self.check_fields_in(&summary, searcher.schema())
    }

    fn check_fields_in(
        &self,
        summary: &crate::es_search::FieldSummary,
        schema: &quarry_index::Schema,
    ) -> Result<(), ApiError> {
        for (agg, node) in self.aggs.iter().zip(&self.nodes) {
            if let (View::Metric { kind, .. }, NodeKind::Metric { field, .. }) =
                (&agg.view, &node.kind)
            {
                // A keyword view of a field holds strings (Elasticsearch refuses number
                // metrics over a keyword field).
                if kind.needs_numbers() && schema.mapping().whole_values(field).is_some() {
                    return Err(bad(format!(
                        "field [{field}] holds keyword values: [{}] needs numbers",
                        kind.type_name()
                    )));
                }
                // A date field's text values are read as times, a number field's as numbers.
                let date = schema.rules(field).is_some_and(|r| {
                    r.ty.date_unit_nanos().is_some() || r.ty == quarry_store::FieldType::Number
                });
                let holds = summary.get(field).filter(|_| !date).map(|summary| {
                    summary
                        .types
                        .iter()
                        .find(|(ty, count)| {
                            **count > 0
                                && !matches!(
                                    ty.as_str(),
                                    "i64" | "u64" | "f64" | "bool" | "timestamp"
                                )
                        })
                        .map(|(ty, _)| ty.as_str())
                });
                if let (true, Some(Some(ty))) = (kind.needs_numbers(), holds) {
                    let ty = if ty == "json" { "string" } else { ty };
                    return Err(bad(format!(
                        "field [{field}] holds {ty} values: [{}] needs numbers",
                        kind.type_name()
                    )));
                }
            }
            agg.sub.check_fields_in(summary, schema)?;
        }
        Ok(())
    }

    /// The answer in Elasticsearch's shape (`typed`: names as `TYPE#NAME`).
    pub(crate) fn render(
        &self,
        results: &[AggResult],
        ctx: Ctx<'_>,
    ) -> Result<Map<String, JsonValue>, ApiError> {
        let typed = ctx.typed;
        let mut out = Map::new();
        let mut types = Vec::new();
        for (agg, result) in self.aggs.iter().zip(results) {
            let (mut value, ty) = agg.render(result, ctx)?;
            if let (Some(meta), Some(object)) = (&agg.meta, value.as_object_mut()) {
                object.insert("meta".into(), meta.clone());
            }
            types.push((agg.name.clone(), ty));
            out.insert(agg.name.clone(), value);
        }
        for pipeline in &self.pipelines {
            if let PipelineKind::Sibling(kind) = pipeline.kind {
                let value = sibling_value(&out, pipeline, kind, typed)?;
                types.push((pipeline.name.clone(), pipeline.kind.type_name()));
                out.insert(pipeline.name.clone(), value);
            }
        }
        if typed {
            for (name, ty) in types {
                if let Some(value) = out.remove(&name) {
                    out.insert(format!("{ty}#{name}"), value);
                }
            }
        }
        Ok(out)
    }

    /// A bucket's object: its count, key fields and sub-aggregations.
    pub(crate) fn bucket_json(
        &self,
        mut head: Map<String, JsonValue>,
        bucket_children: &[AggResult],
        ctx: Ctx<'_>,
    ) -> Result<Map<String, JsonValue>, ApiError> {
        for (name, value) in self.render(bucket_children, ctx)? {
            head.insert(name, value);
        }
        Ok(head)
    }

    /// Adds the parent pipelines' values to `buckets` (in key order).
    fn apply_pipelines(
        &self,
        buckets: &mut [Map<String, JsonValue>],
        ctx: Ctx<'_>,
    ) -> Result<(), ApiError> {
        let typed = ctx.typed;
        for pipeline in &self.pipelines {
            if matches!(pipeline.kind, PipelineKind::Sibling(_)) {
                continue;
            }
            let values: Vec<Option<f64>> = buckets
                .iter()
                .map(|bucket| {
                    let path = &pipeline.paths[0].1;
                    let value = resolve_path(bucket, path, typed)
                        .map_err(|e| bad(format!("{}: {e}", pipeline.name)))?;
                    Ok(match value {
                        None if pipeline.insert_zeros => Some(0.0),
                        other => other,
                    })
                })
                .collect::<Result<_, ApiError>>()?;
            let name = if typed {
                format!("{}#{}", pipeline.kind.type_name(), pipeline.name)
            } else {
                pipeline.name.clone()
            };
            let outputs = pipeline_values(pipeline, &values, buckets, typed)?;
            for (bucket, output) in buckets.iter_mut().zip(outputs) {
                if let Some(output) = output {
                    bucket.insert(name.clone(), json!({ "value": finite(output) }));
                }
            }
        }
        Ok(())
    }
}

/// The values a parent pipeline adds, bucket by bucket (`None`: nothing added there).
fn pipeline_values(
    pipeline: &Pipeline,
    values: &[Option<f64>],
    buckets: &[Map<String, JsonValue>],
    typed: bool,
) -> Result<Vec<Option<Option<f64>>>, ApiError> {
    let n = values.len();
    let mut out = vec![None; n];
    match &pipeline.kind {
        PipelineKind::Derivative => {
            let mut previous: Option<f64> = None;
            // A bucket without a value is skipped: the next one's is against the last
            // present.
            for (i, value) in values.iter().enumerate() {
                if let Some(v) = value {
                    if let Some(p) = previous {
                        out[i] = Some(Some(v - p));
                    }
                    previous = Some(*v);
                }
            }
        }
        PipelineKind::CumulativeSum => {
            let mut sum = 0.0;
            for (i, value) in values.iter().enumerate() {
                sum += value.unwrap_or(0.0);
                out[i] = Some(Some(sum));
            }
        }
        PipelineKind::SerialDiff { lag } => {
            for i in *lag..n {
                if let (Some(v), Some(p)) = (values[i], values[i - lag]) {
                    out[i] = Some(Some(v - p));
                }
            }
        }
        PipelineKind::MovingAvg { window } => {
            // The average of the (up to) `window` values before each bucket.
            for i in 0..n {
                let before: Vec<f64> = values[i.saturating_sub(*window)..i]
                    .iter()
                    .flatten()
                    .copied()
                    .collect();
                if !before.is_empty() {
                    out[i] = Some(Some(before.iter().sum::<f64>() / before.len() as f64));
                }
            }
        }
        PipelineKind::MovingFn {
            window,
            shift,
            function,
        } => {
            for (i, slot) in out.iter_mut().enumerate() {
                let end = (i as i64 + shift).clamp(0, n as i64) as usize;
                let start = (end as i64 - *window as i64).max(0) as usize;
                let window: Vec<f64> = values[start..end].iter().flatten().copied().collect();
                *slot = Some(moving(*function, &window));
            }
        }
        PipelineKind::BucketScript(expr) => {
            for (i, bucket) in buckets.iter().enumerate() {
                let mut params = Vec::new();
                let mut complete = true;
                for (var, path) in &pipeline.paths {
                    let value = resolve_path(bucket, path, typed)
                        .map_err(|e| bad(format!("{}: {e}", pipeline.name)))?;
                    match value {
                        Some(v) => params.push((var.as_str(), v)),
                        None if pipeline.insert_zeros => params.push((var.as_str(), 0.0)),
                        None => complete = false,
                    }
                }
                if complete {
                    out[i] = Some(Some(expr.eval(&params)));
                }
            }
        }
        PipelineKind::Sibling(_) => {}
    }
    Ok(out)
}

/// `MovingFunctions`' functions over one window (NaN where they have no answer).
fn moving(function: MovingFunction, values: &[f64]) -> Option<f64> {
    let n = values.len() as f64;
    let value = match function {
        MovingFunction::Max => values.iter().copied().fold(f64::NAN, f64::max),
        MovingFunction::Min => values.iter().copied().fold(f64::NAN, f64::min),
        MovingFunction::Sum => values.iter().sum(),
        MovingFunction::UnweightedAvg => values.iter().sum::<f64>() / n,
        MovingFunction::LinearWeightedAvg => {
            let (mut sum, mut weights) = (0.0, 0.0);
            for (i, v) in values.iter().enumerate() {
                let weight = (i + 1) as f64;
                sum += v * weight;
                weights += weight;
            }
            sum / weights
        }
        MovingFunction::StdDev => {
            let avg = values.iter().sum::<f64>() / n;
            (values.iter().map(|v| (v - avg) * (v - avg)).sum::<f64>() / n).sqrt()
        }
    };
    Some(value).filter(|v| !v.is_nan())
}

fn finite(v: Option<f64>) -> JsonValue {
    match v {
        Some(v) if v.is_finite() => json!(v),
        _ => JsonValue::Null,
    }
}

/// The number at `path` in a rendered bucket (`resolve_path`), or `None` when there is none.
fn path_value(bucket: &Map<String, JsonValue>, path: &str, typed: bool) -> Option<f64> {
    resolve_path(bucket, path, typed).ok().flatten()
}

/// The number at `path` in a rendered bucket: `_count`, `_key`, `metric`, `metric.stat`,
/// `metric[percent]` or `single_bucket>...`. `Ok(None)`: the metric has no value there (an
/// empty bucket). A path that names no aggregation, a multi-bucket one or a metric of
/// several values without saying which is an error, as in Elasticsearch.
fn resolve_path(
    bucket: &Map<String, JsonValue>,
    path: &str,
    typed: bool,
) -> Result<Option<f64>, String> {
    let (head, rest) = match path.split_once('>') {
        Some((head, rest)) => (head, Some(rest)),
        None => (path, None),
    };
    match head {
        "_count" if rest.is_none() => {
            return Ok(bucket.get("doc_count").and_then(JsonValue::as_f64))
        }
        "_key" if rest.is_none() => return Ok(bucket.get("key").and_then(JsonValue::as_f64)),
        _ => {}
    }
    let (name, stat) = match head.split_once('[') {
        Some((name, percent)) => (name, Some(percent.trim_end_matches(']'))),
        None => match head.split_once('.') {
            Some((name, stat)) => (name, Some(stat)),
            None => (head, None),
        },
    };
    let found = if typed {
        bucket
            .iter()
            .find(|(key, _)| key.split_once('#').map_or(key.as_str(), |(_, n)| n) == name)
            .map(|(_, v)| v)
    } else {
        bucket.get(name)
    };
    let Some(value) = found else {
        return Err(format!("No aggregation found for path [{path}]"));
    };
    let single_value = |got: &str| {
        format!(
            "buckets_path must reference either a number value or a single value numeric \
             metric aggregation, got: [{got}] at aggregation [{name}]"
        )
    };
    if let Some(buckets) = value.get("buckets") {
        if rest.is_some() {
            return Err(single_value("Object[]"));
        }
        let first_key = match buckets {
            JsonValue::Array(list) => list.first().and_then(|b| b.get("key")),
            _ => None,
        };
        let kind = match first_key {
            Some(key) if key.is_i64() || key.is_u64() => "LongTerms",
            Some(key) if key.is_f64() => "DoubleTerms",
            _ => "StringTerms",
        };
        return Err(single_value(kind));
    }
    if let Some(rest) = rest {
        let Some(object) = value.as_object() else {
            return Err(format!("No aggregation found for path [{path}]"));
        };
        return resolve_path(object, rest, typed);
    }
    match stat {
        None if value.get("values").is_some() || value.get("count").is_some() => Err(format!(
            "buckets_path must reference either a number value or a single value numeric \
             metric aggregation, but [{name}] contains multiple values. Please specify which \
             to use."
        )),
        None => Ok(value.get("value").and_then(JsonValue::as_f64)),
        Some(stat) => {
            if let Some(values) = value.get("values") {
                let percent: f64 = stat
                    .parse()
                    .map_err(|_| format!("[{stat}] is not a percent of [{name}]"))?;
                return Ok(match values {
                    JsonValue::Object(map) => map
                        .iter()
                        .find(|(k, _)| k.parse::<f64>().ok() == Some(percent))
                        .and_then(|(_, v)| v.as_f64()),
                    JsonValue::Array(list) => list
                        .iter()
                        .find(|item| item["key"].as_f64() == Some(percent))
                        .and_then(|item| item["value"].as_f64()),
                    _ => None,
                });
            }
            Ok(value.get(stat).and_then(JsonValue::as_f64))
        }
    }
}

/// `avg_bucket` and the like: over the buckets of the sibling `path` names (`agg>metric`).
fn sibling_value(
    out: &Map<String, JsonValue>,
    pipeline: &Pipeline,
    kind: SiblingKind,
    typed: bool,
) -> Result<JsonValue, ApiError> {
    let path = &pipeline.paths[0].1;
    // `terms>avg_x`, or as Elasticsearch also reads it `terms.avg_x` (the bucket's value
    // named after the dot).
    let (agg, metric) = match path.split_once('>') {
        Some(parts) => parts,
        None => match path.split_once('.') {
            Some((agg, metric)) if out.get(agg).is_some_and(|a| a.get("buckets").is_some()) => {
                (agg, metric)
            }
            _ => (path.as_str(), "_count"),
        },
    };
    let buckets: Vec<&Map<String, JsonValue>> = match out.get(agg).and_then(|a| a.get("buckets")) {
        Some(JsonValue::Array(list)) => list.iter().filter_map(JsonValue::as_object).collect(),
        Some(JsonValue::Object(keyed)) => keyed.values().filter_map(JsonValue::as_object).collect(),
        _ => {
            return Err(bad(format!(
                "{}: buckets_path [{path}] must name a multi-bucket aggregation beside it",
                pipeline.name
            )))
        }
    };
    let mut values = Vec::new();
    let mut keys = Vec::new();
    for bucket in buckets {
        let value = resolve_path(bucket, metric, typed)
            .map_err(|e| bad(format!("{}: {e}", pipeline.name)))?;
        let value = match value {
            None if pipeline.insert_zeros => Some(0.0),
            other => other,
        };
        if let Some(v) = value {
            values.push(v);
            keys.push(
                bucket
                    .get("key_as_string")
                    .or(bucket.get("key"))
                    .cloned()
                    .unwrap_or(JsonValue::Null),
            );
        }
    }
    Ok(match kind {
        SiblingKind::Sum => json!({ "value": values.iter().sum::<f64>() }),
        SiblingKind::Avg => json!({
            "value": finite(Some(values.iter().sum::<f64>() / values.len() as f64))
        }),
        SiblingKind::Max | SiblingKind::Min => {
            let best = values.iter().copied().reduce(|a, b| match kind {
                SiblingKind::Max => a.max(b),
                _ => a.min(b),
            });
            let keys: Vec<JsonValue> = values
                .iter()
                .zip(keys)
                .filter(|(v, _)| Some(**v) == best)
                .map(|(_, k)| match k {
                    JsonValue::String(_) => k,
                    other => JsonValue::String(other.to_string()),
                })
                .collect();
            json!({ "value": finite(best), "keys": keys })
        }
    })
}

impl EsAgg {
    /// The answer and its type name.
    fn render(
        &self,
        result: &AggResult,
        ctx: Ctx<'_>,
    ) -> Result<(JsonValue, &'static str), ApiError> {
        match (&self.view, result) {
            (_, AggResult::Metric(MetricResult::Invalid(reason))) => {
                Err(bad(format!("[{}]: {reason}", self.name)))
            }
            (View::Metric { kind, field }, AggResult::Metric(metric)) => Ok((
                render_metric(*kind, ctx.is_date(field), metric),
                kind.type_name(),
            )),
            (
                View::TopHits {
                    from,
                    size,
                    view,
                    by,
                },
                AggResult::Metric(MetricResult::TopHits { hits, total }),
            ) => Ok((
                render_top_hits(hits, *total, *from, *size, view, by.as_ref(), ctx)?,
                "top_hits",
            )),
            (
                View::TopMetrics { fields },
                AggResult::Metric(MetricResult::TopHits { hits, .. }),
            ) => Ok((render_top_metrics(hits, fields, ctx)?, "top_metrics")),
            (view, AggResult::Buckets(buckets)) => self.render_buckets(view, buckets, ctx),
            _ => Err(ApiError::internal("aggregation answer of another kind")),
        }
    }

    /// Terms buckets with counts in `min..=max`, ordered and cut to `size`, and the count of
    /// the events in the buckets not shown (those under `min` too, as Elasticsearch counts
    /// them). `dates`: per key part, whether it is a time (shown in milliseconds and as text).
    #[allow(clippy::too_many_arguments)]
    fn render_terms(
        &self,
        buckets: &[&BucketResult],
        dates: &[bool],
        min: u64,
        max: u64,
        order: &[(OrderBy, bool)],
        size: usize,
        ctx: Ctx<'_>,
    ) -> Result<(Vec<Map<String, JsonValue>>, u64), ApiError> {
        // Integer keys beside fractional ones are doubles, as Elasticsearch merges a long
        // and a double field's terms (2^63 + x shows as 9.2e18, not as an exact integer).
        let floats = buckets
            .iter()
            .any(|b| matches!(b.key, BucketKey::Term(TermKey::Float(_))));
        let mut rendered = Vec::new();
        for bucket in buckets.iter().filter(|b| (min..=max).contains(&b.count)) {
            let bucket: &BucketResult = bucket;
            let BucketKey::Term(key) = &bucket.key else {
                continue;
            };
            let mut head = Map::new();
            match key {
                TermKey::Tuple(parts) => {
                    let shown: Vec<(JsonValue, String)> = parts
                        .iter()
                        .zip(dates.iter().chain(std::iter::repeat(&false)))
                        .map(|(part, date)| tuple_part(part, *date))
                        .collect();
                    let text: Vec<&str> = shown.iter().map(|(_, t)| t.as_str()).collect();
                    head.insert("key_as_string".into(), text.join("|").into());
                    head.insert(
                        "key".into(),
                        shown.into_iter().map(|(v, _)| v).collect::<Vec<_>>().into(),
                    );
                }
                single => {
                    let (mut value, text) = term_key(single, dates.first() == Some(&true));
                    if floats && text.is_none() {
                        if let Some(number) = single.as_f64() {
                            value = json!(number);
                        }
                    }
                    head.insert("key".into(), value);
                    if let Some(text) = text {
                        head.insert("key_as_string".into(), text.into());
                    }
                }
            }
            head.insert("doc_count".into(), bucket.count.into());
            rendered.push((key, self.sub.bucket_json(head, &bucket.children, ctx)?));
        }
        rendered.sort_by(|a, b| compare_terms(a, b, order, ctx.typed));
        rendered.truncate(size);
        let shown: u64 = rendered
            .iter()
            .map(|(_, b)| b["doc_count"].as_u64().unwrap_or(0))
            .sum();
        let other = buckets.iter().map(|b| b.count).sum::<u64>() - shown;
        let mut list: Vec<Map<String, JsonValue>> = rendered.into_iter().map(|(_, b)| b).collect();
        self.sub.apply_pipelines(&mut list, ctx)?;
        Ok((list, other))
    }

    fn render_buckets(
        &self,
        view: &View,
        buckets: &[BucketResult],
        ctx: Ctx<'_>,
    ) -> Result<(JsonValue, &'static str), ApiError> {
        let sub = &self.sub;
        match view {
            View::Terms {
                size,
                order,
                min_doc_count,
                field,
                keys,
                date_keys,
                show_error,
            } => {
                let dates = [ctx.is_date(field) || *date_keys];
                let kept = keys.kept(buckets, dates[0], ctx.is_string_field(field), &self.name)?;
                let (mut list, other) =
                    self.render_terms(&kept, &dates, *min_doc_count, u64::MAX, order, *size, ctx)?;
                if *show_error {
                    with_error_bounds(&mut list);
                }
                let unsigned = ctx.searcher.schema().rules(field).is_some_and(|r| {
                    r.ty == quarry_store::FieldType::Number
                        && r.number_type == quarry_store::mapping::NumberType::UnsignedLong
                });
                let ty = match buckets.first().map(|b| &b.key) {
                    Some(BucketKey::Term(TermKey::Float(_))) => "dterms",
                    Some(BucketKey::Term(TermKey::Uint(_))) => "ulterms",
                    Some(BucketKey::Term(TermKey::Int(_))) if unsigned => "ulterms",
                    Some(BucketKey::Term(TermKey::Int(_) | TermKey::Bool(_))) => "lterms",
                    _ => "sterms",
                };
                Ok((
                    json!({
                        "doc_count_error_upper_bound": 0,
                        "sum_other_doc_count": other,
                        "buckets": list,
                    }),
                    ty,
                ))
            }
            View::MultiTerms {
                size,
                order,
                min_doc_count,
                fields,
                show_error,
            } => {
                let dates: Vec<bool> = fields.iter().map(|f| ctx.is_date(f)).collect();
                let all: Vec<&BucketResult> = buckets.iter().collect();
                let (mut list, other) =
                    self.render_terms(&all, &dates, *min_doc_count, u64::MAX, order, *size, ctx)?;
                if *show_error {
                    with_error_bounds(&mut list);
                }
                Ok((
                    json!({
                        "doc_count_error_upper_bound": 0,
                        "sum_other_doc_count": other,
                        "buckets": list,
                    }),
                    "multi_terms",
                ))
            }
            View::RareTerms {
                max_doc_count,
                field,
                keys,
            } => {
                let dates = [ctx.is_date(field)];
                let order = [(OrderBy::Count, false)];
                let kept = keys.kept(buckets, dates[0], ctx.is_string_field(field), &self.name)?;
                let (list, _) =
                    self.render_terms(&kept, &dates, 1, *max_doc_count, &order, usize::MAX, ctx)?;
                let ty = match buckets.first().map(|b| &b.key) {
                    Some(BucketKey::Term(TermKey::Float(_))) => "drareterms",
                    Some(BucketKey::Term(
                        TermKey::Int(_) | TermKey::Bool(_) | TermKey::Uint(_),
                    )) => "lrareterms",
                    _ => "srareterms",
                };
                Ok((json!({ "buckets": list }), ty))
            }
            View::Histogram {
                interval,
                offset,
                min_doc_count,
                bounds,
                keyed,
                order,
                format,
            } => {
                let mut slots: Vec<(i64, u64, Option<&[AggResult]>)> = buckets
                    .iter()
                    .filter_map(|b| match b.key {
                        BucketKey::Slot(n) => Some((n, b.count, Some(&b.children[..]))),
                        BucketKey::Term(_) => None,
                    })
                    .collect();
                if *min_doc_count == 0 {
                    let slot = |v: f64| ((v - offset) / interval).floor();
                    let mut low = slots.first().map(|s| s.0 as f64);
                    let mut high = slots.last().map(|s| s.0 as f64);
                    if let Some((min, max)) = bounds {
                        low = Some(low.map_or(slot(*min), |l| l.min(slot(*min))));
                        high = Some(high.map_or(slot(*max), |h| h.max(slot(*max))));
                    }
                    if let (Some(low), Some(high)) = (low, high) {
                        // (Written so that NaN spans are refused too.)
                        if (high - low).partial_cmp(&(MAX_FILLED_BUCKETS as f64))
                            != Some(Ordering::Less)
                        {
                            return Err(bad(format!(
                                "aggregation [{}]: more than {MAX_FILLED_BUCKETS} buckets; use a larger interval",
                                self.name
                            )));
                        }
                        slots = fill(slots, low as i64, high as i64, |n| Some(n + 1));
                    }
                }
                let empty = quarry_query::agg_tree::empty_results(&sub.nodes);
                let mut list = Vec::new();
                for (n, count, children) in slots {
                    if count < *min_doc_count {
                        continue;
                    }
                    let key = offset + n as f64 * interval;
                    let mut head = Map::new();
                    if let Some(format) = format {
                        head.insert("key_as_string".into(), format.format(key).into());
                    }
                    head.insert("key".into(), json!(key));
                    head.insert("doc_count".into(), count.into());
                    list.push(sub.bucket_json(head, children.unwrap_or(&empty), ctx)?);
                }
                sub.apply_pipelines(&mut list, ctx)?;
                order.apply(&mut list);
                Ok((
                    keyed_or_list(list, *keyed, |b| {
                        format!("{:?}", b["key"].as_f64().unwrap_or(0.0))
                    }),
                    "histogram",
                ))
            }
            View::DateHistogram {
                buckets: rounding,
                min_doc_count,
                bounds,
                format,
                zone,
                keyed,
                order,
            } => {
                let mut slots: Vec<(i64, u64, Option<&[AggResult]>)> = buckets
                    .iter()
                    .filter_map(|b| match b.key {
                        BucketKey::Slot(start) => Some((start, b.count, Some(&b.children[..]))),
                        BucketKey::Term(_) => None,
                    })
                    .collect();
                if *min_doc_count == 0 {
                    let mut low = slots.first().map(|s| s.0);
                    let mut high = slots.last().map(|s| s.0);
                    if let Some((min, max)) = bounds {
                        let (min, max) = (
                            rounding.start_of(*min).map_err(ApiError::from_query)?,
                            rounding.start_of(*max).map_err(ApiError::from_query)?,
                        );
                        low = Some(low.map_or(min, |l| l.min(min)));
                        high = Some(high.map_or(max, |h| h.max(max)));
                    }
                    if let (Some(low), Some(high)) = (low, high) {
                        let mut added = 0usize;
                        let mut too_many = false;
                        slots = fill(slots, low, high, |start| {
                            added += 1;
                            if added > MAX_FILLED_BUCKETS {
                                too_many = true;
                                return None;
                            }
                            rounding.next(start).ok()
                        });
                        if too_many {
                            return Err(bad(format!(
                                "aggregation [{}]: more than {MAX_FILLED_BUCKETS} buckets; use a larger interval",
                                self.name
                            )));
                        }
                    }
                }
                let empty = quarry_query::agg_tree::empty_results(&sub.nodes);
                let mut list = Vec::new();
                for (start, count, children) in slots {
                    if count < *min_doc_count {
                        continue;
                    }
                    let mut head = Map::new();
                    head.insert("key_as_string".into(), format.format(start, *zone).into());
                    head.insert("key".into(), start.div_euclid(1_000_000).into());
                    head.insert("doc_count".into(), count.into());
                    list.push(sub.bucket_json(head, children.unwrap_or(&empty), ctx)?);
                }
                sub.apply_pipelines(&mut list, ctx)?;
                order.apply(&mut list);
                Ok((
                    keyed_or_list(list, *keyed, |b| {
                        b["key_as_string"].as_str().unwrap_or("").to_owned()
                    }),
                    "date_histogram",
                ))
            }
            View::Range {
                ranges,
                keyed,
                dates,
            } => {
                let empty = quarry_query::agg_tree::empty_results(&sub.nodes);
                let mut list = Vec::new();
                for (i, range) in ranges.iter().enumerate() {
                    let found = buckets.iter().find(|b| b.key == BucketKey::Slot(i as i64));
                    let mut head = Map::new();
                    let text = |v: Option<f64>| match (v, dates) {
                        (None, _) => "*".to_owned(),
                        (Some(v), Some((format, zone))) => format.format(v as i64, *zone),
                        (Some(v), None) => format!("{v:?}"),
                    };
                    let key = range
                        .key
                        .clone()
                        .unwrap_or_else(|| format!("{}-{}", text(range.from), text(range.to)));
                    head.insert("key".into(), key.into());
                    for (name, bound) in [("from", range.from), ("to", range.to)] {
                        if let Some(v) = bound {
                            match dates {
                                Some((format, zone)) => {
                                    head.insert(name.into(), json!((v / 1e6).floor()));
                                    head.insert(
                                        format!("{name}_as_string"),
                                        format.format(v as i64, *zone).into(),
                                    );
                                }
                                None => {
                                    head.insert(name.into(), json!(v));
                                }
                            }
                        }
                    }
                    head.insert("doc_count".into(), found.map_or(0, |b| b.count).into());
                    list.push(sub.bucket_json(
                        head,
                        found.map_or(&empty[..], |b| &b.children),
                        ctx,
                    )?);
                }
                sub.apply_pipelines(&mut list, ctx)?;
                let ty = if dates.is_some() {
                    "date_range"
                } else {
                    "range"
                };
                Ok((
                    keyed_or_list(list, *keyed, |b| b["key"].as_str().unwrap_or("").to_owned()),
                    ty,
                ))
            }
            View::Filters {
                names,
                count: filters,
                other_key,
                keyed,
            } => {
                let filters = *filters;
                let empty = quarry_query::agg_tree::empty_results(&sub.nodes);
                let mut list = Vec::new();
                let mut keys = Vec::new();
                for i in 0..filters + usize::from(other_key.is_some()) {
                    let found = buckets.iter().find(|b| b.key == BucketKey::Slot(i as i64));
                    let mut head = Map::new();
                    let key = match (names, i < filters) {
                        (Some(names), true) => Some(names[i].clone()),
                        (_, false) => other_key.clone(),
                        (None, true) => None,
                    };
                    if let (Some(key), false) = (&key, *keyed) {
                        head.insert("key".into(), key.clone().into());
                    }
                    head.insert("doc_count".into(), found.map_or(0, |b| b.count).into());
                    list.push(sub.bucket_json(
                        head,
                        found.map_or(&empty[..], |b| &b.children),
                        ctx,
                    )?);
                    keys.push(key.unwrap_or_default());
                }
                sub.apply_pipelines(&mut list, ctx)?;
                let buckets = if *keyed && names.is_some() {
                    JsonValue::Object(
                        keys.into_iter()
                            .zip(list)
                            .map(|(k, b)| (k, JsonValue::Object(b)))
                            .collect(),
                    )
                } else {
                    list.into_iter()
                        .map(JsonValue::Object)
                        .collect::<Vec<_>>()
                        .into()
                };
                Ok((json!({ "buckets": buckets }), "filters"))
            }
            View::Adjacency { keys } => {
                let mut shown: Vec<(&String, &BucketResult)> = buckets
                    .iter()
                    .filter_map(|b| match b.key {
                        BucketKey::Slot(i) if b.count > 0 => {
                            Some((keys.get(usize::try_from(i).ok()?)?, b))
                        }
                        _ => None,
                    })
                    .collect();
                shown.sort_by(|a, b| a.0.cmp(b.0));
                let mut list = Vec::new();
                for (key, bucket) in shown {
                    let mut head = Map::new();
                    head.insert("key".into(), key.clone().into());
                    head.insert("doc_count".into(), bucket.count.into());
                    list.push(sub.bucket_json(head, &bucket.children, ctx)?);
                }
                sub.apply_pipelines(&mut list, ctx)?;
                Ok((json!({ "buckets": list }), "adjacency_matrix"))
            }
            View::Single { kind } => {
                let found = buckets.first();
                let empty = quarry_query::agg_tree::empty_results(&sub.nodes);
                let mut head = Map::new();
                head.insert("doc_count".into(), found.map_or(0, |b| b.count).into());
                let body = sub.bucket_json(head, found.map_or(&empty[..], |b| &b.children), ctx)?;
                Ok((JsonValue::Object(body), kind))
            }
            View::Composite(view) => Ok((view.render(buckets, sub, ctx, &self.name)?, "composite")),
            View::Metric { .. } | View::TopHits { .. } | View::TopMetrics { .. } => {
                Err(ApiError::internal("a metric with buckets"))
            }
        }
    }
}

/// What rendering needs besides the answer: whether names are typed (`TYPE#NAME`), the
/// searcher that answered (its schema says which fields are dates; it fetches top hits) and
/// the indices it read, in order.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub(crate) typed: bool,
    pub(crate) searcher: &'a Searcher,
    pub(crate) indices: &'a [String],
    /// In a cluster, the events of the top hits, fetched from the leaves that found them
    /// (`top_hits_of`); else they are read from `searcher`.
    pub(crate) fetched: Option<&'a TopHitEvents>,
}

/// The events of top hits fetched from a cluster's leaves.
pub(crate) type TopHitEvents =
    std::collections::HashMap<TopHit, Vec<(String, quarry_format::Value)>>;

/// Every top hit kept in `results` (for a cluster's root to fetch).
pub(crate) fn top_hits_of(results: &[AggResult]) -> Vec<TopHit> {
    fn walk(result: &AggResult, found: &mut Vec<TopHit>) {
        match result {
            AggResult::Metric(MetricResult::TopHits { hits, .. }) => found.extend(hits),
            AggResult::Metric(_) => {}
            AggResult::Buckets(buckets) => {
                for bucket in buckets {
                    for child in &bucket.children {
                        walk(child, found);
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    for result in results {
        walk(result, &mut found);
    }
    found
}

impl Ctx<'_> {
    /// The events of `hits`, in their order.
    fn events(
        &self,
        hits: &[TopHit],
    ) -> Result<Vec<Vec<(String, quarry_format::Value)>>, ApiError> {
        match self.fetched {
            Some(fetched) => hits
                .iter()
                .map(|hit| {
                    fetched.get(hit).cloned().ok_or_else(|| {
                        ApiError::internal("a top hit's event was not fetched from its node")
                    })
                })
                .collect(),
            None => {
                let located: Vec<_> = hits.iter().map(TopHit::partial).collect();
                self.searcher
                    .fetch_partial(&located)
                    .map_err(ApiError::from_query)
            }
        }
    }

    /// `@timestamp`, or a field mapped as a date: its values are times (ns in the tree).
    pub(crate) fn is_date(&self, field: &str) -> bool {
        field == quarry_format::TIME_FIELD
            || self
                .searcher
                .schema()
                .rules(field)
                .is_some_and(|r| r.ty.date_unit_nanos().is_some())
    }

    /// Whether `field` holds strings as far as the mapping says: unmapped, text or keyword
    /// (ip, number, date and boolean fields do not).
    pub(crate) fn is_string_field(&self, field: &str) -> bool {
        use quarry_store::FieldType;
        !self.is_date(field)
            && self
                .searcher
                .schema()
                .rules(field)
                .is_none_or(|r| matches!(r.ty, FieldType::Text | FieldType::Keyword))
    }

    /// The index a hit of the searcher came from.
    fn index_of(&self, hit: &TopHit) -> &str {
        match self.indices {
            [one] => one,
            many => {
                let part = Searcher::part_of(hit.block);
                many.get(part).map_or("", String::as_str)
            }
        }
    }
}

/// `slots` (in key order) with an empty bucket at every missing key from `low` to `high`,
/// each key after the last from `next` (`None` stops).
fn fill(
    slots: Vec<(i64, u64, Option<&[AggResult]>)>,
    low: i64,
    high: i64,
    mut next: impl FnMut(i64) -> Option<i64>,
) -> Vec<(i64, u64, Option<&[AggResult]>)> {
    let mut out = Vec::with_capacity(slots.len());
    let mut present = slots.into_iter().peekable();
    let mut key = low;
    loop {
        while let Some(slot) = present.next_if(|s| s.0 < key) {
            out.push(slot);
        }
        match present.next_if(|s| s.0 == key) {
            Some(slot) => out.push(slot),
            None => out.push((key, 0, None)),
        }
        if key >= high {
            break;
        }
        match next(key) {
            Some(n) if n > key => key = n,
            _ => break,
        }
    }
    out.extend(present);
    out
}

/// `include` and `exclude` of `terms`: a regular expression over string keys, or a list of
/// values (strings, numbers; a date as text in a date field's keys). Keys left out are not
/// counted anywhere, as Elasticsearch leaves them out while collecting.
#[derive(Clone, Debug, Default)]
struct KeyFilter {
    include: Option<KeySet>,
    exclude: Option<KeySet>,
}

#[derive(Clone, Debug)]
enum KeySet {
    Regex(std::sync::Arc<RegexKeys>),
    Values(Vec<JsonValue>),
    /// `{"partition": p, "num_partitions": n}`: the keys whose hash is `p` modulo `n`, with
    /// Elasticsearch's hashes, so that a client paging through partitions sees the same
    /// terms in each (`partition_of`).
    Partition {
        partition: u64,
        of: u64,
    },
}

/// A compiled `include`/`exclude` expression.
struct RegexKeys {
    text: String,
    pattern: quarry_query::pattern::Pattern,
}

impl std::fmt::Debug for RegexKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "/{}/", self.text)
    }
}

impl KeyFilter {
    fn parse(body: &JsonValue, path: &str) -> Result<KeyFilter, ApiError> {
        let set = |key: &str| -> Result<Option<KeySet>, ApiError> {
            match body.get(key) {
                None => Ok(None),
                Some(JsonValue::String(text)) => {
                    let pattern = quarry_query::pattern::Pattern::new(
                        quarry_query::pattern::PatternKind::Regex(text.clone()),
                    )
                    .map_err(|e| bad(format!("{path}.{key}: {}", e.0)))?;
                    Ok(Some(KeySet::Regex(std::sync::Arc::new(RegexKeys {
                        text: text.clone(),
                        pattern,
                    }))))
                }
                Some(JsonValue::Array(values)) => Ok(Some(KeySet::Values(values.clone()))),
                Some(JsonValue::Object(options)) if key == "include" => {
                    let here = format!("{path}.include");
                    if let Some(other) =
                        options.keys().find(|k| !matches!(k.as_str(), "partition" | "num_partitions"))
                    {
                        return Err(bad(format!("unsupported: {here}.{other}")));
                    }
                    let count = |name: &str| {
                        options.get(name).and_then(JsonValue::as_u64).ok_or_else(|| {
                            bad(format!("{here}.{name}: expected a whole number"))
                        })
                    };
                    let (partition, of) = (count("partition")?, count("num_partitions")?);
                    if of == 0 || partition >= of {
                        return Err(bad(format!(
                            "{here}: partition must be below num_partitions (> 0)"
                        )));
                    }
                    Ok(Some(KeySet::Partition { partition, of }))
                }
                Some(other) => Err(bad(format!(
                    "unsupported: {path}.{key} = {other} (a regular expression, a list of values or an include partition)"
                ))),
            }
        };
        Ok(KeyFilter {
            include: set("include")?,
            exclude: set("exclude")?,
        })
    }

    /// The buckets kept; a regular expression over keys that are not strings is an error.
    fn kept<'b>(
        &self,
        buckets: &'b [BucketResult],
        date: bool,
        strings: bool,
        name: &str,
    ) -> Result<Vec<&'b BucketResult>, ApiError> {
        let regex = |set: &Option<KeySet>| matches!(set, Some(KeySet::Regex(_)));
        if !strings && (regex(&self.include) || regex(&self.exclude)) {
            return Err(bad(format!(
                "Aggregation [{name}] cannot support regular expression style include/exclude settings as they can only be applied to string fields. Use an array of values for include/exclude clauses"
            )));
        }
        let mut kept = Vec::with_capacity(buckets.len());
        for bucket in buckets {
            let BucketKey::Term(key) = &bucket.key else {
                continue;
            };
            let inside = |set: &KeySet| set.holds(key, date, name);
            if self.include.as_ref().map_or(Ok(true), inside)?
                && !self.exclude.as_ref().map_or(Ok(false), inside)?
            {
                kept.push(bucket);
            }
        }
        Ok(kept)
    }
}

impl KeySet {
    fn holds(&self, key: &TermKey, date: bool, name: &str) -> Result<bool, ApiError> {
        match (self, key) {
            (KeySet::Partition { partition, of }, key) => {
                Ok(partition_of(key, date, *of) == Some(*partition))
            }
            (KeySet::Regex(regex), TermKey::Str(text)) => Ok(regex.pattern.matches(text)),
            (KeySet::Regex(_), _) => Err(bad(format!(
                "Aggregation [{name}] cannot support regular expression style include/exclude settings as they can only be applied to string fields. Use an array of values for include/exclude clauses"
            ))),
            (KeySet::Values(values), key) => Ok(values.iter().any(|value| match (value, key) {
                (JsonValue::String(v), TermKey::Str(k)) => v == k,
                (JsonValue::String(v), TermKey::Int(k)) if date => {
                    quarry_query::time::parse_time(v, 0).is_ok_and(|t| t == *k)
                }
                (JsonValue::Bool(v), TermKey::Bool(k)) => v == k,
                (value, key) => match (value.as_f64(), key.as_f64()) {
                    (Some(v), Some(k)) => v == k,
                    _ => value.as_str().is_some_and(|v| {
                        v.parse::<f64>().ok() == key.as_f64() && key.as_f64().is_some()
                    }),
                },
            })),
        }
    }
}

/// The partition of `of` a terms key falls in, as Elasticsearch computes it: a string's
/// MurmurHash3 (x86, 32 bits, seed 31) over its UTF-8 bytes, a number's HPPC `mix64` of its
/// long (a double's sortable bits, a time's milliseconds, a boolean's 0 or 1), either modulo
/// `of` rounding toward negative infinity. Golden values from Lucene's `StringHelper` and
/// HPPC's `BitMixer` are in the tests.
fn partition_of(key: &TermKey, date: bool, of: u64) -> Option<u64> {
    let of = i64::try_from(of).ok()?;
    let long = match *key {
        TermKey::Str(ref text) => {
            let hash =
                murmur3::murmur3_32(&mut std::io::Cursor::new(text.as_bytes()), 31).ok()? as i32;
            return u64::try_from(i64::from(hash).rem_euclid(of)).ok();
        }
        TermKey::Int(v) if date => v.div_euclid(1_000_000),
        TermKey::Int(v) => v,
        TermKey::Uint(v) => v as i64,
        TermKey::Bool(b) => i64::from(b),
        TermKey::Float(_) => {
            let bits = key.as_f64()?.to_bits() as i64;
            bits ^ ((bits >> 63) & i64::MAX)
        }
        _ => return None,
    };
    u64::try_from(mix64(long).rem_euclid(of)).ok()
}

/// HPPC's `BitMixer.mix64`, the long hash Elasticsearch partitions number terms by.
fn mix64(value: i64) -> i64 {
    let mut z = value as u64;
    z = (z ^ (z >> 32)).wrapping_mul(0x4cd6_944c_5cc2_0b6d);
    z = (z ^ (z >> 29)).wrapping_mul(0xfc12_c5b1_9d32_59e9);
    (z ^ (z >> 32)) as i64
}

/// A terms key as Elasticsearch shows it: the key, and its text when the key is not it
/// (booleans are 1 or 0 with "true" or "false"; times are milliseconds with an ISO time).
fn term_key(key: &TermKey, date: bool) -> (JsonValue, Option<String>) {
    match key {
        TermKey::Str(s) => (s.clone().into(), None),
        TermKey::Bool(b) => (u8::from(*b).into(), Some(b.to_string())),
        TermKey::Int(v) if date => (
            v.div_euclid(1_000_000).into(),
            Some(DateFormat::iso().format(*v, Zone::Utc)),
        ),
        TermKey::Int(v) => ((*v).into(), None),
        TermKey::Uint(v) => ((*v).into(), None),
        TermKey::Float(bits) => (finite(Some(f64::from_bits(*bits))), None),
        TermKey::Tuple(_) | TermKey::Missing => (JsonValue::Null, None),
    }
}

/// One part of a `multi_terms` key and its text: values as they are, times as ISO text.
fn tuple_part(part: &TermKey, date: bool) -> (JsonValue, String) {
    match part {
        TermKey::Str(s) => (s.clone().into(), s.clone()),
        TermKey::Bool(b) => ((*b).into(), b.to_string()),
        TermKey::Int(v) if date => {
            let text = DateFormat::iso().format(*v, Zone::Utc);
            (text.clone().into(), text)
        }
        TermKey::Int(v) => ((*v).into(), v.to_string()),
        TermKey::Uint(v) => ((*v).into(), v.to_string()),
        TermKey::Float(bits) => {
            let v = f64::from_bits(*bits);
            (finite(Some(v)), format!("{v}"))
        }
        TermKey::Tuple(_) | TermKey::Missing => (JsonValue::Null, String::new()),
    }
}

fn keyed_or_list(
    list: Vec<Map<String, JsonValue>>,
    keyed: bool,
    key: impl Fn(&Map<String, JsonValue>) -> String,
) -> JsonValue {
    if keyed {
        let object: Map<String, JsonValue> = list
            .into_iter()
            .map(|b| (key(&b), JsonValue::Object(b)))
            .collect();
        json!({ "buckets": object })
    } else {
        json!({ "buckets": list })
    }
}

/// Terms buckets in the asked order, ties by key ascending.
fn compare_terms(
    a: &(&TermKey, Map<String, JsonValue>),
    b: &(&TermKey, Map<String, JsonValue>),
    order: &[(OrderBy, bool)],
    typed: bool,
) -> Ordering {
    let by_key = |x: &TermKey, y: &TermKey| match (x.as_f64(), y.as_f64()) {
        (Some(p), Some(q)) => p.total_cmp(&q),
        _ => x.cmp(y),
    };
    for (by, descending) in order {
        let ordering = match by {
            OrderBy::Count => a.1["doc_count"].as_u64().cmp(&b.1["doc_count"].as_u64()),
            OrderBy::Key => by_key(a.0, b.0),
            OrderBy::Path(path) => {
                // Buckets without a value go last, either way.
                match (path_value(&a.1, path, typed), path_value(&b.1, path, typed)) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    (Some(_), None) => return Ordering::Less,
                    (None, Some(_)) => return Ordering::Greater,
                    (None, None) => Ordering::Equal,
                }
            }
        };
        let ordering = if *descending {
            ordering.reverse()
        } else {
            ordering
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    by_key(a.0, b.0)
}

fn render_metric(kind: MetricKind, time: bool, result: &MetricResult) -> JsonValue {
    // A time metric in milliseconds, with its text.
    let value = |v: Option<f64>| -> JsonValue {
        match v.filter(|v| v.is_finite()) {
            None => JsonValue::Null,
            Some(v) if time => json!(v / 1e6),
            Some(v) => json!(v),
        }
    };
    let with_text = |out: &mut Map<String, JsonValue>, key: &str, v: Option<f64>| {
        out.insert(key.to_owned(), value(v));
        if let (true, Some(v)) = (time, v.filter(|v| v.is_finite())) {
            out.insert(
                format!("{key}_as_string"),
                DateFormat::iso().format(v as i64, Zone::Utc).into(),
            );
        }
    };
    let mut out = Map::new();
    match (kind, result) {
        (
            _,
            MetricResult::Stats {
                count,
                min,
                max,
                sum,
                sum_of_squares,
            },
        ) => {
            let n = *count as f64;
            let some = |v: f64| (*count > 0).then_some(v);
            let avg = some(sum / n);
            match kind {
                MetricKind::Avg => with_text(&mut out, "value", avg),
                MetricKind::Min => with_text(&mut out, "value", some(*min)),
                MetricKind::Max => with_text(&mut out, "value", some(*max)),
                MetricKind::Sum => with_text(&mut out, "value", Some(*sum)),
                _ => {
                    out.insert("count".into(), (*count).into());
                    with_text(&mut out, "min", some(*min));
                    with_text(&mut out, "max", some(*max));
                    with_text(&mut out, "avg", avg);
                    with_text(&mut out, "sum", Some(*sum));
                    if let MetricKind::ExtendedStats { sigma } = kind {
                        // Elasticsearch's formulas, so that the last digits agree too.
                        let spread = sum_of_squares - sum * sum / n;
                        let variance = some(spread / n).map(|v| v.max(0.0));
                        let sampling = (*count > 1).then(|| (spread / (n - 1.0)).max(0.0));
                        let deviation = variance.map(f64::sqrt);
                        let deviation_sampling = sampling.map(f64::sqrt);
                        out.insert("sum_of_squares".into(), finite(some(*sum_of_squares)));
                        out.insert("variance".into(), finite(variance));
                        out.insert("variance_population".into(), finite(variance));
                        out.insert("variance_sampling".into(), finite(sampling));
                        out.insert("std_deviation".into(), finite(deviation));
                        out.insert("std_deviation_population".into(), finite(deviation));
                        out.insert("std_deviation_sampling".into(), finite(deviation_sampling));
                        let bound = |d: Option<f64>, sign: f64| {
                            finite(avg.zip(d).map(|(a, d)| a + sign * sigma * d))
                        };
                        out.insert(
                            "std_deviation_bounds".into(),
                            json!({
                                "upper": bound(deviation, 1.0),
                                "lower": bound(deviation, -1.0),
                                "upper_population": bound(deviation, 1.0),
                                "lower_population": bound(deviation, -1.0),
                                "upper_sampling": bound(deviation_sampling, 1.0),
                                "lower_sampling": bound(deviation_sampling, -1.0),
                            }),
                        );
                    }
                }
            }
        }
        (_, MetricResult::ValueCount(n)) => {
            out.insert("value".into(), (*n).into());
        }
        (_, MetricResult::Cardinality(n)) => {
            out.insert("value".into(), (*n).into());
        }
        (_, MetricResult::MedianAbsoluteDeviation(v) | MetricResult::WeightedAvg(v)) => {
            with_text(&mut out, "value", *v)
        }
        (MetricKind::Percentiles { keyed, .. }, MetricResult::Percentiles(values)) => {
            if keyed {
                let mut map = Map::new();
                for (p, v) in values {
                    with_text(&mut map, &format!("{p:?}"), *v);
                }
                out.insert("values".into(), map.into());
            } else {
                let list: Vec<JsonValue> = values
                    .iter()
                    .map(|(p, v)| {
                        let mut item = Map::new();
                        item.insert("key".into(), json!(p));
                        with_text(&mut item, "value", *v);
                        JsonValue::Object(item)
                    })
                    .collect();
                out.insert("values".into(), list.into());
            }
        }
        (
            _,
            MetricResult::Percentiles(_) | MetricResult::TopHits { .. } | MetricResult::Invalid(_),
        ) => {}
    }
    JsonValue::Object(out)
}

/// Aggregations whose values a `flat_object` field can give (its leaves are keywords).
const FLAT_OBJECT_AGGS: [&str; 5] = ["terms", "missing", "value_count", "cardinality", "filter"];

/// Refuses an aggregation (at any depth of `aggs`) over a field at or under a `flat_object`
/// that it cannot read, naming both as OpenSearch does. Checked before the tree is read, so
/// that a request over such a field gets this answer rather than a refusal of the type.
pub(crate) fn refuse_flat_object_fields(
    aggs: &JsonValue,
    mapping: &quarry_store::Mapping,
) -> Result<(), ApiError> {
    let Some(aggs) = aggs.as_object() else {
        return Ok(());
    };
    for body in aggs.values().filter_map(JsonValue::as_object) {
        for (kind, options) in body {
            if let Some(sub) = ["aggs", "aggregations"]
                .contains(&kind.as_str())
                .then_some(options)
            {
                refuse_flat_object_fields(sub, mapping)?;
                continue;
            }
            let Some(field) = options.get("field").and_then(JsonValue::as_str) else {
                continue;
            };
            if mapping.flat_root(field).is_some() && !FLAT_OBJECT_AGGS.contains(&kind.as_str()) {
                return Err(bad(format!(
                    "Field [{field}] of type [flat_object] is not supported for aggregation \
                     [{kind}]"
                )));
            }
        }
    }
    Ok(())
}

/// `show_term_doc_count_error` of a terms aggregation.
fn show_error(body: &JsonValue, path: &str) -> Result<bool, ApiError> {
    match body.get("show_term_doc_count_error") {
        None => Ok(false),
        Some(JsonValue::Bool(show)) => Ok(*show),
        Some(other) => Err(bad(format!(
            "{path}.show_term_doc_count_error: expected true or false, got {other}"
        ))),
    }
}

/// Each bucket's `doc_count_error_upper_bound`: 0, as counts over one index are exact.
fn with_error_bounds(buckets: &mut [Map<String, JsonValue>]) {
    for bucket in buckets {
        bucket.insert("doc_count_error_upper_bound".into(), 0.into());
    }
}

/// Names each text multi-field an aggregation reads (its `field`, at any depth) by its
/// parent, whose values it shows (`quarry_store::mapping::MultiField`). A keyword
/// multi-field keeps its name: the tree reads it as its parent's whole values up to its
/// `ignore_above` (quarry-query's agg_tree.rs).
pub(crate) fn resolve_multi_fields(aggs: &mut JsonValue, mapping: &quarry_store::Mapping) {
    match aggs {
        JsonValue::Object(object) => {
            for (key, value) in object.iter_mut() {
                match value {
                    JsonValue::String(name) if key == "field" => {
                        if let Some((parent, quarry_store::mapping::MultiField::Tokens { .. })) =
                            mapping.multi_field(name)
                        {
                            *name = parent.to_owned();
                        }
                    }
                    other => resolve_multi_fields(other, mapping),
                }
            }
        }
        JsonValue::Array(items) => items
            .iter_mut()
            .for_each(|item| resolve_multi_fields(item, mapping)),
        _ => {}
    }
}

/// A field name as Quarry stores it (`@timestamp` is `_time`; `x.keyword`, the whole values of
/// `x` up to that view's `ignore_above`, is read so by the tree: `Mapping::whole_values`).
pub(crate) fn field_of(body: &JsonValue, path: &str) -> Result<String, ApiError> {
    body.get("field")
        .and_then(JsonValue::as_str)
        .map(|f| dsl::field_name(f).to_owned())
        .ok_or_else(|| {
            bad(format!(
                "{path}: Required one of fields [field, script], but none were specified (Quarry runs no scripts: give a field)"
            ))
        })
}

pub(crate) fn number(body: &JsonValue, key: &str, path: &str) -> Result<Option<f64>, ApiError> {
    match body.get(key) {
        None | Some(JsonValue::Null) => Ok(None),
        Some(value) => value
            .as_f64()
            .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
            .map(Some)
            .ok_or_else(|| {
                bad(format!("{path}.{key}: expected a number, got {value}"))
                    .with_kind("x_content_parse_exception")
            }),
    }
}

pub(crate) fn count_option(
    body: &JsonValue,
    key: &str,
    default: u64,
    path: &str,
) -> Result<u64, ApiError> {
    match body.get(key) {
        None => Ok(default),
        Some(value) => value.as_u64().ok_or_else(|| {
            bad(format!(
                "{path}.{key}: expected a whole number ≥ 0, got {value}"
            ))
        }),
    }
}

fn flag(body: &JsonValue, key: &str, default: bool, path: &str) -> Result<bool, ApiError> {
    match body.get(key) {
        None => Ok(default),
        Some(JsonValue::Bool(b)) => Ok(*b),
        Some(value) => Err(bad(format!(
            "{path}.{key}: expected true or false, got {value}"
        ))),
    }
}

pub(crate) fn zone_of(body: &JsonValue, path: &str) -> Result<Zone, ApiError> {
    match body.get("time_zone") {
        None => Ok(Zone::Utc),
        Some(JsonValue::String(text)) => {
            Zone::parse(text).map_err(|e| bad(format!("{path}.time_zone: {e}")))
        }
        Some(value) => Err(bad(format!(
            "{path}.time_zone: expected a string, got {value}"
        ))),
    }
}

/// A date given as epoch milliseconds or as a date (with date math), in ns.
pub(crate) fn date_value(
    value: &JsonValue,
    zone: Zone,
    rounding: Rounding,
    now: i64,
    path: &str,
) -> Result<i64, ApiError> {
    match value {
        JsonValue::Number(n) => n
            .as_f64()
            .map(|ms| (ms * 1e6) as i64)
            .ok_or_else(|| bad(format!("{path}: expected a date"))),
        JsonValue::String(text) => match text.trim().parse::<i64>() {
            Ok(ms) => Ok(ms.saturating_mul(1_000_000)),
            Err(_) => {
                parse_time_in(text, now, zone, rounding).map_err(|e| bad(format!("{path}: {e}")))
            }
        },
        other => Err(bad(format!("{path}: expected a date, got {other}"))),
    }
}

/// A node of the tree and how it is shown, from one aggregation's body.
/// The aggregation's name in `aggs.NAME.TYPE`.
fn agg_name(path: &str) -> &str {
    path.rsplit('.').nth(1).unwrap_or(path)
}

fn node_of(
    kind: &str,
    body: &JsonValue,
    path: &str,
    now: i64,
) -> Result<(NodeKind, View), ApiError> {
    let metric = |metric: Metric, kind: MetricKind| -> Result<(NodeKind, View), ApiError> {
        let field = field_of(body, path)?;
        // A number (or its text) stands in for a missing value of a number metric; any
        // value for a count.
        let missing = match (missing_value(body, path)?, kind.needs_numbers()) {
            (Some(TermKey::Str(text)), true) => Some(
                text.trim()
                    .parse::<f64>()
                    .map(TermKey::float)
                    .map_err(|_| bad(format!("{path}.missing: expected a number, got {text:?}")))?,
            ),
            (Some(TermKey::Bool(_)), true) => {
                return Err(bad(format!("{path}.missing: expected a number")))
            }
            (missing, _) => missing,
        };
        Ok((
            NodeKind::Metric {
                field: field.clone(),
                metric,
                missing,
            },
            View::Metric { kind, field },
        ))
    };
    match kind {
        "avg" => metric(Metric::Stats, MetricKind::Avg),
        "min" => metric(Metric::Stats, MetricKind::Min),
        "max" => metric(Metric::Stats, MetricKind::Max),
        "sum" => metric(Metric::Stats, MetricKind::Sum),
        "stats" => metric(Metric::Stats, MetricKind::Stats),
        "extended_stats" => {
            let sigma = number(body, "sigma", path)?.unwrap_or(2.0);
            if sigma.is_nan() || sigma < 0.0 {
                return Err(bad(format!(
                    "[sigma] must be greater than or equal to 0. Found [{sigma:?}] in [{}]",
                    agg_name(path)
                )));
            }
            metric(Metric::Stats, MetricKind::ExtendedStats { sigma })
        }
        "value_count" => metric(Metric::ValueCount, MetricKind::ValueCount),
        "weighted_avg" => {
            // `value` and `weight` each name a field and may give a `missing` number.
            let part = |key: &str| -> Result<(String, Option<TermKey>), ApiError> {
                let here = format!("{path}.{key}");
                let body = body
                    .get(key)
                    .filter(|b| b.is_object())
                    .ok_or_else(|| bad(format!("{here}: expected {{\"field\": ...}}")))?;
                if let Some(other) = body.as_object().and_then(|o| {
                    o.keys()
                        .find(|k| !matches!(k.as_str(), "field" | "missing"))
                }) {
                    return Err(bad(format!("unsupported: {here}.{other}")));
                }
                let missing = match body.get("missing") {
                    None => None,
                    Some(value) => Some(TermKey::float(
                        value
                            .as_f64()
                            .or_else(|| value.as_str().and_then(|t| t.trim().parse().ok()))
                            .filter(|v: &f64| v.is_finite())
                            .ok_or_else(|| {
                                bad(format!("{here}.missing: expected a number, got {value}"))
                            })?,
                    )),
                };
                Ok((field_of(body, &here)?, missing))
            };
            let (field, missing) = part("value")?;
            let (weight, weight_missing) = part("weight")?;
            Ok((
                NodeKind::Metric {
                    field: field.clone(),
                    metric: Metric::WeightedAvg {
                        weight,
                        weight_missing,
                    },
                    missing,
                },
                View::Metric {
                    kind: MetricKind::WeightedAvg,
                    field,
                },
            ))
        }
        "median_absolute_deviation" => {
            // The t-digest's size in Elasticsearch; the answer here is exact while values are
            // few enough to count (`Percentiles`), so it changes nothing but must be valid.
            if let Some(compression) = number(body, "compression", path)? {
                if compression.is_nan() || compression <= 0.0 {
                    return Err(bad(format!(
                        "[compression] must be greater than 0. Found [{compression:?}] in [{}]",
                        agg_name(path)
                    )));
                }
            }
            metric(
                Metric::MedianAbsoluteDeviation,
                MetricKind::MedianAbsoluteDeviation,
            )
        }
        "cardinality" => {
            // Counts are HyperLogLog++ estimates at one precision (exact below a few
            // thousand values): the threshold changes only how much memory a shard spends.
            if let Some(threshold) = body.get("precision_threshold") {
                if threshold.as_i64().is_none_or(|t| t < 0) {
                    return Err(bad(format!(
                        "[precisionThreshold] must be greater than or equal to 0. Found [{threshold}] in [{}]",
                        agg_name(path)
                    )));
                }
            }
            metric(Metric::Cardinality, MetricKind::Cardinality)
        }
        "percentiles" => {
            let name = agg_name(path);
            let percents = match body.get("percents") {
                Some(JsonValue::Array(values)) if values.is_empty() => {
                    return Err(bad(format!("[percents] must not be empty: [{name}]")))
                }
                // Numbers, or their text (Grafana sends ["25", "50", ...]).
                Some(JsonValue::Array(values)) => values
                    .iter()
                    .map(|v| {
                        v.as_f64()
                            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                            .filter(|p| (0.0..=100.0).contains(p))
                            .ok_or_else(|| {
                                bad(format!("{path}.percents: numbers from 0 to 100, not {v}"))
                            })
                    })
                    .collect::<Result<Vec<f64>, _>>()?,
                Some(other) => {
                    return Err(bad(format!(
                        "{path}.percents: expected a list, got {other}"
                    )))
                }
                None => vec![1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0],
            };
            let keyed = flag(body, "keyed", true, path)?;
            match percentiles_method(body, path)? {
                Some(digits) => metric(
                    Metric::HdrPercentiles { percents, digits },
                    MetricKind::Percentiles { keyed, hdr: true },
                ),
                None => metric(
                    Metric::Percentiles(percents),
                    MetricKind::Percentiles { keyed, hdr: false },
                ),
            }
        }
        "terms" => {
            let field = field_of(body, path)?;
            let size = count_option(body, "size", 10, path)? as usize;
            let min_doc_count = count_option(body, "min_doc_count", 1, path)?;
            if min_doc_count == 0 {
                return Err(bad(format!(
                    "unsupported: {path}.min_doc_count = 0 (buckets for values no match holds)"
                )));
            }
            // One index is one shard: a term under the shard's bound never leaves it.
            let min_doc_count =
                min_doc_count.max(count_option(body, "shard_min_doc_count", 0, path)?);
            let order = terms_order(body.get("order"), path)?;
            // `value_type: date` types the values of an unmapped field, `missing` among them:
            // a date, keyed as a time.
            let date_keys = body.get("value_type").and_then(JsonValue::as_str) == Some("date");
            let missing = match (missing_value(body, path)?, date_keys) {
                (Some(TermKey::Str(_)), true) => Some(TermKey::Int(date_value(
                    &body["missing"],
                    Zone::Utc,
                    Rounding::Down,
                    now,
                    &format!("{path}.missing"),
                )?)),
                (Some(TermKey::Int(ms)), true) => Some(TermKey::Int(ms.saturating_mul(1_000_000))),
                (missing, _) => missing,
            };
            Ok((
                NodeKind::Terms {
                    field: field.clone(),
                    missing,
                },
                View::Terms {
                    size,
                    order,
                    min_doc_count,
                    field,
                    keys: KeyFilter::parse(body, path)?,
                    date_keys,
                    show_error: show_error(body, path)?,
                },
            ))
        }
        "multi_terms" => {
            let items = body
                .get("terms")
                .and_then(JsonValue::as_array)
                .filter(|items| items.len() >= 2)
                .ok_or_else(|| {
                    bad(format!(
                        "{path}.terms: expected a list of at least two fields"
                    ))
                })?;
            let mut fields = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let here = format!("{path}.terms.{i}");
                if let Some(key) = item.as_object().and_then(|o| {
                    o.keys()
                        .find(|k| !matches!(k.as_str(), "field" | "missing" | "value_type"))
                }) {
                    return Err(bad(format!("unsupported: {here}.{key}")));
                }
                fields.push((field_of(item, &here)?, missing_value(item, &here)?));
            }
            let min_doc_count = count_option(body, "min_doc_count", 1, path)?;
            if min_doc_count == 0 {
                return Err(bad(format!(
                    "unsupported: {path}.min_doc_count = 0 (buckets for values no match holds)"
                )));
            }
            // One index is one shard: a term under the shard's bound never leaves it.
            let min_doc_count =
                min_doc_count.max(count_option(body, "shard_min_doc_count", 0, path)?);
            Ok((
                NodeKind::MultiTerms {
                    fields: fields.clone(),
                },
                View::MultiTerms {
                    size: count_option(body, "size", 10, path)? as usize,
                    order: terms_order(body.get("order"), path)?,
                    min_doc_count,
                    fields: fields.into_iter().map(|(f, _)| f).collect(),
                    show_error: show_error(body, path)?,
                },
            ))
        }
        "composite" => {
            let (kind, view) = crate::es_composite::parse(body, path, now)?;
            Ok((kind, View::Composite(Box::new(view))))
        }
        "rare_terms" => {
            let field = field_of(body, path)?;
            let max_doc_count = count_option(body, "max_doc_count", 1, path)?;
            if !(1..=100).contains(&max_doc_count) {
                return Err(bad(format!(
                    "[max_doc_count] must be greater than 0 and at most 100 in [{}]",
                    agg_name(path)
                )));
            }
            Ok((
                NodeKind::Terms {
                    field: field.clone(),
                    missing: missing_value(body, path)?,
                },
                View::RareTerms {
                    max_doc_count,
                    field,
                    keys: KeyFilter::parse(body, path)?,
                },
            ))
        }
        "histogram" => {
            let field = field_of(body, path)?;
            let interval = number(body, "interval", path)?
                .filter(|i| i.is_finite() && *i > 0.0)
                .ok_or_else(|| bad(format!("{path}: expected an interval > 0")))?;
            let offset = number(body, "offset", path)?.unwrap_or(0.0);
            let bounds = match body.get("extended_bounds") {
                None => None,
                Some(b) => Some((
                    number(b, "min", path)?.unwrap_or(f64::INFINITY),
                    number(b, "max", path)?.unwrap_or(f64::NEG_INFINITY),
                ))
                .filter(|(min, max)| min <= max),
            };
            Ok((
                NodeKind::Histogram {
                    field,
                    interval,
                    offset,
                },
                View::Histogram {
                    interval,
                    offset,
                    min_doc_count: count_option(body, "min_doc_count", 0, path)?,
                    bounds,
                    keyed: flag(body, "keyed", false, path)?,
                    order: HistogramOrder::parse(body.get("order"), false, path)?,
                    format: match body.get("format") {
                        None => None,
                        Some(JsonValue::String(pattern)) => Some(
                            DecimalFormat::parse(pattern)
                                .map_err(|e| bad(format!("unsupported: {path}.format {e}")))?,
                        ),
                        Some(other) => {
                            return Err(bad(format!(
                                "{path}.format: expected a string, got {other}"
                            )))
                        }
                    },
                },
            ))
        }
        "date_histogram" => {
            let field = match body.get("field") {
                None => quarry_format::TIME_FIELD.to_owned(),
                Some(_) => field_of(body, path)?,
            };
            let zone = zone_of(body, path)?;
            let offset = time_offset(body, path)?;
            let buckets = time_buckets(body, zone, offset, path)?;
            let format = match body.get("format") {
                None => DateFormat::iso(),
                Some(JsonValue::String(text)) => DateFormat::parse(text)
                    .map_err(|e| bad(format!("unsupported: {path}.format: {e}")))?,
                Some(other) => {
                    return Err(bad(format!(
                        "{path}.format: expected a string, got {other}"
                    )))
                }
            };
            let bounds = match body.get("extended_bounds") {
                None => None,
                Some(b) => {
                    let get = |key: &str, rounding| -> Result<Option<i64>, ApiError> {
                        b.get(key)
                            .map(|v| {
                                date_value(
                                    v,
                                    zone,
                                    rounding,
                                    now,
                                    &format!("{path}.extended_bounds.{key}"),
                                )
                            })
                            .transpose()
                    };
                    get("min", Rounding::Down)?.zip(get("max", Rounding::Up)?)
                }
            };
            Ok((
                NodeKind::DateHistogram { field, buckets },
                View::DateHistogram {
                    buckets,
                    min_doc_count: count_option(body, "min_doc_count", 0, path)?,
                    bounds,
                    format,
                    zone,
                    keyed: flag(body, "keyed", false, path)?,
                    order: HistogramOrder::parse(body.get("order"), true, path)?,
                },
            ))
        }
        "range" | "date_range" => {
            let field = field_of(body, path)?;
            let dates = kind == "date_range" || field == quarry_format::TIME_FIELD;
            let zone = zone_of(body, path)?;
            let format = match body.get("format") {
                None => DateFormat::iso(),
                Some(JsonValue::String(text)) if dates => DateFormat::parse(text)
                    .map_err(|e| bad(format!("unsupported: {path}.format: {e}")))?,
                Some(other) => return Err(bad(format!("unsupported: {path}.format = {other}"))),
            };
            let items = body
                .get("ranges")
                .and_then(JsonValue::as_array)
                .ok_or_else(|| bad(format!("{path}: expected ranges")))?;
            let mut ranges = Vec::with_capacity(items.len());
            let mut time_ranges = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let here = format!("{path}.ranges.{i}");
                if let Some(key) = item.as_object().and_then(|o| {
                    o.keys()
                        .find(|k| !matches!(k.as_str(), "from" | "to" | "key"))
                }) {
                    return Err(bad(format!("unsupported: {here}.{key}")));
                }
                let time_bound = |key: &str| -> Result<Option<i64>, ApiError> {
                    match item.get(key) {
                        None | Some(JsonValue::Null) => Ok(None),
                        Some(value) => {
                            date_value(value, zone, Rounding::Down, now, &format!("{here}.{key}"))
                                .map(Some)
                        }
                    }
                };
                let bound = |key: &str| -> Result<Option<f64>, ApiError> {
                    match item.get(key) {
                        None | Some(JsonValue::Null) => Ok(None),
                        Some(_) if dates => Ok(time_bound(key)?.map(|ns| ns as f64)),
                        Some(_) => number(item, key, &here),
                    }
                };
                if dates {
                    time_ranges.push((time_bound("from")?, time_bound("to")?));
                }
                let key = match item.get("key") {
                    None => None,
                    Some(JsonValue::String(k)) => Some(k.clone()),
                    Some(other) => {
                        return Err(bad(format!("{here}.key: expected a string, got {other}")))
                    }
                };
                ranges.push(RangeView {
                    key,
                    from: bound("from")?,
                    to: bound("to")?,
                });
            }
            // Date bounds are exact ns in the tree (the view's f64 only shows them).
            let node = if dates {
                NodeKind::DateRange {
                    field,
                    ranges: time_ranges,
                }
            } else {
                NodeKind::Range {
                    field,
                    ranges: ranges.iter().map(|r| (r.from, r.to)).collect(),
                }
            };
            Ok((
                node,
                View::Range {
                    ranges,
                    keyed: flag(body, "keyed", false, path)?,
                    dates: dates.then_some((format, zone)),
                },
            ))
        }
        "filters" => {
            let filters = body
                .get("filters")
                .ok_or_else(|| bad(format!("{path}: [filters] cannot be empty.")))?;
            let (names, asts): (Option<Vec<String>>, Vec<FilterQuery>) = match filters {
                JsonValue::Object(named) => {
                    let mut names = Vec::new();
                    let mut asts = Vec::new();
                    for (name, query) in named {
                        names.push(name.clone());
                        asts.push(
                            FilterQuery::from_dsl(query, &format!("{path}.filters.{name}"), now)
                                .map_err(crate::es_search::dsl_error)?,
                        );
                    }
                    (Some(names), asts)
                }
                JsonValue::Array(list) => (
                    None,
                    list.iter()
                        .enumerate()
                        .map(|(i, q)| {
                            FilterQuery::from_dsl(q, &format!("{path}.filters.{i}"), now)
                                .map_err(crate::es_search::dsl_error)
                        })
                        .collect::<Result<_, _>>()?,
                ),
                other => {
                    return Err(bad(format!(
                        "{path}.filters: expected an object or a list, got {other}"
                    )))
                }
            };
            if asts.is_empty() {
                return Err(bad(format!("{path}: [filters] cannot be empty.")));
            }
            let other_key = match (
                body.get("other_bucket_key"),
                flag(body, "other_bucket", false, path)?,
            ) {
                (Some(JsonValue::String(key)), _) => Some(key.clone()),
                (Some(other), _) => {
                    return Err(bad(format!(
                        "{path}.other_bucket_key: expected a string, got {other}"
                    )))
                }
                (None, true) => Some("_other_".to_owned()),
                (None, false) => None,
            };
            let keyed = flag(body, "keyed", true, path)?;
            let count = asts.len();
            Ok((
                NodeKind::Filters {
                    filters: asts,
                    other: other_key.is_some(),
                },
                View::Filters {
                    names,
                    count,
                    other_key,
                    keyed,
                },
            ))
        }
        "adjacency_matrix" => {
            let Some(JsonValue::Object(named)) = body.get("filters") else {
                return Err(bad(format!(
                    "{path}: expected [filters], an object of named filters"
                )));
            };
            if named.is_empty() {
                return Err(bad(format!("{path}: [filters] cannot be empty.")));
            }
            let separator = match body.get("separator") {
                None => "&",
                Some(JsonValue::String(text)) => text.as_str(),
                Some(other) => {
                    return Err(bad(format!(
                        "{path}.separator: expected a string, got {other}"
                    )))
                }
            };
            // Elasticsearch pairs the filters in the order of their names.
            let mut filters: Vec<(&String, &JsonValue)> = named.iter().collect();
            filters.sort_by(|a, b| a.0.cmp(b.0));
            let mut keys = Vec::new();
            let mut asts = Vec::new();
            for (name, query) in &filters {
                keys.push((*name).clone());
                asts.push(
                    FilterQuery::from_dsl(query, &format!("{path}.filters.{name}"), now)
                        .map_err(crate::es_search::dsl_error)?,
                );
            }
            for (i, (a, first)) in filters.iter().enumerate() {
                for (b, second) in &filters[i + 1..] {
                    keys.push(format!("{a}{separator}{b}"));
                    // Both, as a filter (a bool of two `filter` clauses scores nothing).
                    let both = json!({"bool": {"filter": [first, second]}});
                    asts.push(
                        FilterQuery::from_dsl(
                            &both,
                            &format!("{path}.filters.{a}{separator}{b}"),
                            now,
                        )
                        .map_err(crate::es_search::dsl_error)?,
                    );
                }
            }
            Ok((
                NodeKind::Filters {
                    filters: asts,
                    other: false,
                },
                View::Adjacency { keys },
            ))
        }
        "filter" => {
            let filter =
                FilterQuery::from_dsl(body, path, now).map_err(crate::es_search::dsl_error)?;
            Ok((
                NodeKind::Filters {
                    filters: vec![filter],
                    other: false,
                },
                View::Single { kind: "filter" },
            ))
        }
        "top_hits" => top_hits(body, path),
        "top_metrics" => top_metrics(body, path),
        "missing" => {
            let field = field_of(body, path)?;
            // With a `missing` value every doc holds one: the bucket is empty.
            let kind = match missing_value(body, path)? {
                None => NodeKind::Missing { field },
                Some(_) => NodeKind::Filters {
                    filters: vec![FilterQuery::from_dsl(&json!({"match_none": {}}), path, now)
                        .map_err(crate::es_search::dsl_error)?],
                    other: false,
                },
            };
            Ok((kind, View::Single { kind: "missing" }))
        }
        other => Err(bad(format!(
            "{path}: aggregation type [{other}] is not supported yet"
        ))),
    }
}

/// `missing`: the value a doc without one is taken to hold.
fn missing_value(body: &JsonValue, path: &str) -> Result<Option<TermKey>, ApiError> {
    Ok(match body.get("missing") {
        None => None,
        Some(JsonValue::String(s)) => Some(TermKey::Str(s.clone())),
        Some(JsonValue::Bool(b)) => Some(TermKey::Bool(*b)),
        Some(JsonValue::Number(n)) => Some(match (n.as_i64(), n.as_u64()) {
            (Some(v), _) => TermKey::Int(v),
            (None, Some(v)) => TermKey::Uint(v),
            _ => TermKey::float(n.as_f64().unwrap_or(f64::NAN)),
        }),
        Some(other) => {
            return Err(bad(format!(
                "{path}.missing: expected a value, got {other}"
            )))
        }
    })
}

/// `percentiles`' method: `hdr` (its significant digits, 0 to 5, 3 by default) or the
/// t-digest (`None`), whose `compression` is checked and changes nothing here: the values
/// are interpolated exactly while few enough to count (`Percentiles::interpolated`).
fn percentiles_method(body: &JsonValue, path: &str) -> Result<Option<u32>, ApiError> {
    let name = agg_name(path);
    let options = |key: &str| -> Result<Option<&Map<String, JsonValue>>, ApiError> {
        match body.get(key) {
            None => Ok(None),
            Some(JsonValue::Object(options)) => Ok(Some(options)),
            Some(other) => Err(bad(format!(
                "{path}.{key}: expected an object of options, got {other}"
            ))),
        }
    };
    let (hdr, tdigest) = (options("hdr")?, options("tdigest")?);
    if hdr.is_some() && tdigest.is_some() {
        return Err(bad(format!(
            "Parameter [tdigest] cannot be used with parameter [hdr] in [{name}]"
        )));
    }
    if let Some(tdigest) = tdigest {
        for (key, value) in tdigest {
            match key.as_str() {
                "compression" if value.as_f64().is_some_and(|c| c >= 0.0) => {}
                "compression" => {
                    return Err(bad(format!(
                    "[compression] must be greater than or equal to 0. Found [{:?}] in [{name}]",
                    value.as_f64().unwrap_or(f64::NAN)
                )))
                }
                other => return Err(bad(format!("unsupported: {path}.tdigest.{other}"))),
            }
        }
        return Ok(None);
    }
    let Some(hdr) = hdr else {
        return Ok(None);
    };
    let mut digits = 3;
    for (key, value) in hdr {
        match key.as_str() {
            "number_of_significant_value_digits" => {
                let n = value.as_i64().ok_or_else(|| {
                    bad(format!(
                        "{path}.hdr.{key}: expected a whole number from 0 to 5, got {value}"
                    ))
                })?;
                digits = u32::try_from(n).ok().filter(|d| *d <= 5).ok_or_else(|| {
                    bad(format!(
                        "[numberOfSignificantValueDigits] must be between 0 and 5: [{name}]"
                    ))
                })?;
            }
            other => return Err(bad(format!("unsupported: {path}.hdr.{other}"))),
        }
    }
    Ok(Some(digits))
}

/// A `sort` of hits within an aggregation: on `@timestamp` only (hits are taken in time
/// order), `desc` or `asc` (true: oldest first).
fn time_sort(value: &JsonValue, path: &str) -> Result<bool, ApiError> {
    let (field, descending) = sort_key(value, path)?;
    if dsl::field_name(&field) != quarry_format::TIME_FIELD {
        return Err(bad(format!(
            "unsupported: {path}.sort = {value} (top_metrics sorts by @timestamp only)"
        )));
    }
    Ok(!descending)
}

/// A `sort` of one key: the field and whether it is descending (a field sorts ascending
/// unless asked).
fn sort_key(value: &JsonValue, path: &str) -> Result<(String, bool), ApiError> {
    let refused = || {
        bad(format!(
            "unsupported: {path}.sort = {value} (hits within aggregations sort by one key, asc or desc)"
        ))
    };
    let one = match value {
        JsonValue::Array(items) if items.len() == 1 => &items[0],
        JsonValue::Array(_) => return Err(refused()),
        other => other,
    };
    let (field, order) = match one {
        JsonValue::String(field) => (field.as_str(), None),
        JsonValue::Object(map) if map.len() == 1 => {
            let (field, how) = map.iter().next().ok_or_else(refused)?;
            let order = match how {
                JsonValue::String(order) => Some(order.as_str()),
                JsonValue::Object(options) if options.keys().all(|k| k == "order") => {
                    options.get("order").and_then(JsonValue::as_str)
                }
                _ => return Err(refused()),
            };
            (field.as_str(), order)
        }
        _ => return Err(refused()),
    };
    match order {
        None | Some("asc") => Ok((field.to_owned(), false)),
        Some("desc") => Ok((field.to_owned(), true)),
        Some(_) => Err(refused()),
    }
}

/// The most hits of one bucket a `top_hits` sorted by a field other than the time reads (they
/// are fetched and sorted when the answer is rendered); a bucket holding more is refused.
const TOP_HITS_SORTED_MAX: usize = 10_000;

/// `top_hits`: `size` (3), `from`, a `sort` on `@timestamp` (required: without one
/// Elasticsearch ranks by score, which hits within aggregations do not have here), and what
/// hits show (`_source`, `fields`, `docvalue_fields`, `version`).
fn top_hits(body: &JsonValue, path: &str) -> Result<(NodeKind, View), ApiError> {
    let object = body
        .as_object()
        .ok_or_else(|| bad(format!("{path}: expected an object of options")))?;
    let mut view = crate::es_hits::HitView::default();
    let (mut size, mut from, mut sort) = (3u64, 0u64, None);
    for (key, value) in object {
        match key.as_str() {
            "size" => size = count_option(body, "size", 3, path)?,
            "from" => from = count_option(body, "from", 0, path)?,
            "sort" => sort = Some(sort_key(value, path)?),
            "highlight" => return Err(bad(format!("unsupported: {path}.highlight"))),
            _ if view.read_body_key(key, value)? => {}
            other => return Err(bad(format!("unsupported: {path}.{other}"))),
        }
    }
    let (field, descending) = sort.ok_or_else(|| {
        bad(format!(
            "unsupported: {path} without a sort (give \"sort\": [{{\"@timestamp\": \"desc\"}}] or another field: hits within aggregations have no score)"
        ))
    })?;
    let by_time = dsl::field_name(&field) == quarry_format::TIME_FIELD;
    if from + size > 100 {
        return Err(bad(format!(
            "Top hits result window is too large, the top hits aggregator [{}]'s from + size must be less than or equal to: [100] but was [{}]",
            agg_name(path),
            from + size
        )));
    }
    Ok((
        NodeKind::Metric {
            field: quarry_format::TIME_FIELD.to_owned(),
            metric: Metric::TopHits {
                size: match by_time {
                    true => (from + size) as usize,
                    // One more than kept, to tell a bucket that holds more.
                    false => TOP_HITS_SORTED_MAX + 1,
                },
                oldest_first: !(by_time && descending),
            },
            missing: None,
        },
        View::TopHits {
            from: from as usize,
            size: size as usize,
            view: Box::new(view),
            by: (!by_time).then_some((field, descending)),
        },
    ))
}

/// `top_metrics`: `metrics` (a field or a list of them), a `sort` on `@timestamp`, `size` (1).
fn top_metrics(body: &JsonValue, path: &str) -> Result<(NodeKind, View), ApiError> {
    let object = body
        .as_object()
        .ok_or_else(|| bad(format!("{path}: expected an object of options")))?;
    if let Some(key) = object
        .keys()
        .find(|k| !matches!(k.as_str(), "metrics" | "sort" | "size"))
    {
        return Err(bad(format!(
            "unsupported: {path}.{key} (Quarry takes metrics, sort, size here)"
        )));
    }
    let items: Vec<&JsonValue> = match object.get("metrics") {
        Some(JsonValue::Array(items)) => items.iter().collect(),
        Some(one @ JsonValue::Object(_)) => vec![one],
        _ => {
            return Err(bad(format!(
                "{path}.metrics: expected {{\"field\": ...}} or a list of them"
            )))
        }
    };
    let fields = items
        .iter()
        .enumerate()
        .map(|(i, item)| field_of(item, &format!("{path}.metrics.{i}")))
        .collect::<Result<Vec<String>, _>>()?;
    let oldest_first = time_sort(
        object
            .get("sort")
            .ok_or_else(|| bad(format!("{path}: expected a sort")))?,
        path,
    )?;
    Ok((
        NodeKind::Metric {
            field: quarry_format::TIME_FIELD.to_owned(),
            metric: Metric::TopHits {
                size: count_option(body, "size", 1, path)?.max(1) as usize,
                oldest_first,
            },
            missing: None,
        },
        View::TopMetrics { fields },
    ))
}

/// The value of `field` an event (`flat`) sorts by: a keyword view's (`X.keyword`, a keyword
/// multi-field) is its parent's string up to the view's `ignore_above`; of an array, the item
/// that sorts first (the least ascending, the greatest descending); `null` for none.
fn sort_value(
    flat: &serde_json::Map<String, JsonValue>,
    field: &str,
    descending: bool,
    ctx: Ctx<'_>,
) -> JsonValue {
    let (name, max_chars) = match ctx.searcher.schema().mapping().whole_values(field) {
        Some((parent, max_chars)) => (parent, max_chars),
        None => (field, None),
    };
    let held = |value: &&JsonValue| match (value, max_chars) {
        (JsonValue::String(s), Some(limit)) => s.chars().count() <= limit as usize,
        _ => true,
    };
    let values: Vec<&JsonValue> = match flat.get(name) {
        Some(JsonValue::Array(items)) => items.iter().filter(held).collect(),
        Some(value) => std::iter::once(value).filter(held).collect(),
        None => Vec::new(),
    };
    values
        .into_iter()
        .min_by(|a, b| sort_order(a, b, descending))
        .cloned()
        .unwrap_or(JsonValue::Null)
}

/// The order of two `top_hits` sort values: numbers before strings, `null` last, each
/// reversed when `descending`.
fn sort_order(a: &JsonValue, b: &JsonValue, descending: bool) -> std::cmp::Ordering {
    let rank = |v: &JsonValue| match v {
        JsonValue::Number(_) => 0,
        JsonValue::String(_) | JsonValue::Bool(_) => 1,
        _ => 2,
    };
    rank(a).cmp(&rank(b)).then_with(|| {
        let order = match (a, b) {
            (JsonValue::Number(x), JsonValue::Number(y)) => x
                .as_f64()
                .unwrap_or(f64::NAN)
                .total_cmp(&y.as_f64().unwrap_or(f64::NAN)),
            (x, y) => {
                let text = |v: &JsonValue| match v {
                    JsonValue::String(s) => s.clone(),
                    other => other.to_string(),
                };
                text(x).cmp(&text(y))
            }
        };
        if descending {
            order.reverse()
        } else {
            order
        }
    })
}

/// `top_hits`' answer: the hits' events fetched and shown as the view says.
/// `top_hits`' answer: `hits` are in time order, the first `from + size` when sorted by time;
/// sorted `by` a field, every hit of the bucket (up to `TOP_HITS_SORTED_MAX`), sorted here by
/// the field's values (numbers before strings, a hit without one last, ties in time order).
fn render_top_hits(
    hits: &[TopHit],
    total: u64,
    from: usize,
    size: usize,
    view: &crate::es_hits::HitView,
    by: Option<&(String, bool)>,
    ctx: Ctx<'_>,
) -> Result<JsonValue, ApiError> {
    let mut shown: Vec<(JsonValue, JsonValue)> = Vec::new();
    let chosen: Vec<TopHit> = match by {
        None => hits[from.min(hits.len())..].to_vec(),
        Some((field, _)) if hits.len() > TOP_HITS_SORTED_MAX => {
            return Err(bad(format!(
                "top_hits sorted by [{field}] reads at most {TOP_HITS_SORTED_MAX} events of a bucket; one holds {total} (sort by @timestamp, or narrow the query)"
            )))
        }
        Some(_) => hits.to_vec(),
    };
    let events = ctx.events(&chosen)?;
    let words = crate::es_hits::QueryWords::default();
    for (hit, event) in chosen.iter().zip(events) {
        let flat = crate::event_json(&event);
        let mut json = json!({
            "_index": ctx.index_of(hit),
            "_id": quarry_query::doc_id::id_of(hit.time, &event),
            "_score": null,
        });
        view.render(&mut json, &flat, hit.time, &words);
        let key = match by {
            None => json!(hit.time.div_euclid(1_000_000)),
            Some((field, descending)) => sort_value(&flat, field, *descending, ctx),
        };
        shown.push((key, json));
    }
    if let Some((_, descending)) = by {
        // Stable: ties stay in time order.
        shown.sort_by(|(a, _), (b, _)| sort_order(a, b, *descending));
        shown = shown.into_iter().skip(from).take(size).collect();
    }
    let shown: Vec<JsonValue> = shown
        .into_iter()
        .map(|(key, mut json)| {
            json["sort"] = json!([key]);
            json
        })
        .collect();
    Ok(json!({"hits": {
        "total": {"value": total, "relation": "eq"},
        "max_score": null,
        "hits": shown,
    }}))
}

/// `top_metrics`' answer: per top hit, its time as the sort value and the fields' values.
fn render_top_metrics(
    hits: &[TopHit],
    fields: &[String],
    ctx: Ctx<'_>,
) -> Result<JsonValue, ApiError> {
    let events = ctx.events(hits)?;
    let top: Vec<JsonValue> = hits
        .iter()
        .zip(events)
        .map(|(hit, event)| {
            let flat = crate::event_json(&event);
            let metrics: Map<String, JsonValue> = fields
                .iter()
                .map(|field| {
                    let value = if field == quarry_format::TIME_FIELD {
                        DateFormat::iso().format(hit.time, Zone::Utc).into()
                    } else {
                        flat.get(field).cloned().unwrap_or(JsonValue::Null)
                    };
                    (field.clone(), value)
                })
                .collect();
            json!({
                "sort": [DateFormat::iso().format(hit.time, Zone::Utc)],
                "metrics": metrics,
            })
        })
        .collect();
    Ok(json!({ "top": top }))
}

/// `order`: `{"_count": "desc"}`, `{"_key": "asc"}`, `{"metric": "desc"}`, or a list of them.
fn terms_order(value: Option<&JsonValue>, path: &str) -> Result<Vec<(OrderBy, bool)>, ApiError> {
    let items: Vec<&JsonValue> = match value {
        None => return Ok(vec![(OrderBy::Count, true)]),
        Some(JsonValue::Array(list)) => list.iter().collect(),
        Some(one) => vec![one],
    };
    let mut order = Vec::new();
    for item in items {
        let object = item
            .as_object()
            .ok_or_else(|| bad(format!("{path}.order: expected {{\"_count\": \"desc\"}}")))?;
        for (by, direction) in object {
            let descending = match direction.as_str() {
                Some("desc") => true,
                Some("asc") => false,
                _ => {
                    return Err(bad(format!(
                        "{path}.order.{by}: asc or desc, not {direction}"
                    )))
                }
            };
            let by = match by.as_str() {
                "_count" => OrderBy::Count,
                "_key" | "_term" => OrderBy::Key,
                path => OrderBy::Path(path.to_owned()),
            };
            order.push((by, descending));
        }
    }
    Ok(order)
}

/// A date_histogram's buckets: `calendar_interval`, `fixed_interval` or the older `interval`.
pub(crate) fn time_buckets(
    body: &JsonValue,
    zone: Zone,
    offset: i64,
    path: &str,
) -> Result<TimeBuckets, ApiError> {
    let text = |key: &str| {
        body.get(key).map(|v| {
            v.as_str()
                .ok_or_else(|| bad(format!("{path}.{key}: expected a string like 1h, got {v}")))
        })
    };
    let calendar = |unit: &str| -> Option<CalendarUnit> {
        Some(match unit {
            "year" | "1y" => CalendarUnit::Year,
            "quarter" | "1q" => CalendarUnit::Quarter,
            "month" | "1M" => CalendarUnit::Month,
            "week" | "1w" => CalendarUnit::Week,
            "day" | "1d" => CalendarUnit::Day,
            "hour" | "1h" => CalendarUnit::Hour,
            "minute" | "1m" => CalendarUnit::Minute,
            "second" | "1s" => CalendarUnit::Second,
            _ => return None,
        })
    };
    let fixed = |text: &str| -> Result<TimeBuckets, ApiError> {
        let interval = parse_interval(text).map_err(|e| bad(format!("{path}: {e}")))?;
        Ok(TimeBuckets::Fixed {
            interval,
            offset,
            zone,
        })
    };
    match (
        text("calendar_interval"),
        text("fixed_interval"),
        text("interval"),
    ) {
        (Some(unit), None, None) => {
            let unit = unit?;
            let unit = calendar(unit).ok_or_else(|| bad(format!("{path}.calendar_interval: [{unit}] is not a calendar unit (1m, 1h, 1d, 1w, 1M, 1q, 1y)")))?;
            Ok(TimeBuckets::Calendar { unit, offset, zone })
        }
        (None, Some(interval), None) => fixed(interval?),
        // The older `interval`: a calendar unit when it is one, else fixed.
        (None, None, Some(interval)) => {
            let interval = interval?;
            match calendar(interval) {
                Some(unit) => Ok(TimeBuckets::Calendar { unit, offset, zone }),
                None => fixed(interval),
            }
        }
        (None, None, None) => Err(bad(format!(
            "{path}: expected calendar_interval or fixed_interval"
        ))),
        _ => Err(bad(format!(
            "{path}: give one of calendar_interval, fixed_interval and interval"
        ))),
    }
}

/// A date_histogram's `offset` (`+1h`, `-30m`, or milliseconds), in ns.
pub(crate) fn time_offset(body: &JsonValue, path: &str) -> Result<i64, ApiError> {
    match body.get("offset") {
        None => Ok(0),
        Some(JsonValue::String(text)) => {
            signed_interval(text).map_err(|e| bad(format!("{path}.offset: {e}")))
        }
        Some(JsonValue::Number(n)) => Ok(n
            .as_i64()
            .map(|ms| ms.saturating_mul(1_000_000))
            .unwrap_or(0)),
        Some(other) => Err(bad(format!(
            "{path}.offset: expected a time like 1h, got {other}"
        ))),
    }
}

/// `+1h`, `-30m`, `1d`: ns.
fn signed_interval(text: &str) -> Result<i64, String> {
    let text = text.trim();
    match text.strip_prefix('-') {
        Some(rest) => parse_interval(rest).map(|v| -v),
        None => parse_interval(text.strip_prefix('+').unwrap_or(text)),
    }
}

/// The options each aggregation type takes: those honoured, and those that cannot change
/// its answer here (`shard_size`, `execution_hint`, `collect_mode`: counts are exact over one
/// index; `value_type`: the type of values of an unmapped field or a script, and an unmapped
/// field has none here while scripts are refused, except `terms`' `missing` value, which
/// `value_type: date` reads as a date). Any other option is a 400 naming it: ignored, it would
/// give a different answer than asked for. A test (crates/quarry/tests/es_options/) asks
/// each with and without and shows it changes the answer, or is one of the no-ops above.
/// Types not listed (`filter`, `global`, `top_hits`, ...) check their options where read.
pub const AGG_OPTIONS: &[(&str, &[&str])] = &[
    (
        "date_histogram",
        &[
            "field",
            "fixed_interval",
            "calendar_interval",
            "interval",
            "min_doc_count",
            "extended_bounds",
            "format",
            "time_zone",
            "offset",
            "keyed",
            "order",
        ],
    ),
    (
        "terms",
        &[
            "field",
            "size",
            "order",
            "min_doc_count",
            "missing",
            "include",
            "exclude",
            "value_type",
            "shard_size",
            "shard_min_doc_count",
            "execution_hint",
            "collect_mode",
            "show_term_doc_count_error",
        ],
    ),
    (
        "multi_terms",
        &[
            "terms",
            "size",
            "order",
            "min_doc_count",
            "shard_size",
            "shard_min_doc_count",
            "collect_mode",
            "show_term_doc_count_error",
        ],
    ),
    // `precision` tunes the cuckoo filter of a sharded count; counts here are exact.
    (
        "rare_terms",
        &[
            "field",
            "max_doc_count",
            "missing",
            "precision",
            "include",
            "exclude",
            "value_type",
        ],
    ),
    ("composite", &["sources", "size", "after"]),
    (
        "histogram",
        &[
            "field",
            "interval",
            "offset",
            "min_doc_count",
            "extended_bounds",
            "keyed",
            "order",
            "format",
        ],
    ),
    ("range", &["field", "ranges", "keyed"]),
    (
        "date_range",
        &["field", "ranges", "keyed", "format", "time_zone"],
    ),
    ("avg", &["field", "missing"]),
    ("min", &["field", "missing"]),
    ("max", &["field", "missing"]),
    ("sum", &["field", "missing"]),
    ("stats", &["field", "missing"]),
    ("value_count", &["field", "missing"]),
    ("extended_stats", &["field", "sigma", "missing"]),
    (
        "median_absolute_deviation",
        &["field", "compression", "missing"],
    ),
    ("weighted_avg", &["value", "weight"]),
    ("cardinality", &["field", "precision_threshold", "missing"]),
    (
        "percentiles",
        &["field", "percents", "keyed", "missing", "hdr", "tdigest"],
    ),
    (
        "filters",
        &["filters", "other_bucket", "other_bucket_key", "keyed"],
    ),
    ("adjacency_matrix", &["filters", "separator"]),
    ("missing", &["field", "missing"]),
];

/// The options each pipeline aggregation takes (`format` is read only to be refused: Quarry
/// shows no value as text).
pub const PIPELINE_OPTIONS: &[(&str, &[&str])] = &[
    ("derivative", &["buckets_path", "gap_policy", "format"]),
    // Elasticsearch's cumulative sum takes no `gap_policy`: a gap adds nothing to it.
    ("cumulative_sum", &["buckets_path", "format"]),
    (
        "serial_diff",
        &["buckets_path", "gap_policy", "format", "lag"],
    ),
    (
        "moving_avg",
        &["buckets_path", "gap_policy", "format", "window", "model"],
    ),
    (
        "moving_fn",
        &[
            "buckets_path",
            "gap_policy",
            "format",
            "window",
            "shift",
            "script",
        ],
    ),
    (
        "bucket_script",
        &["buckets_path", "gap_policy", "format", "script"],
    ),
    ("avg_bucket", &["buckets_path", "gap_policy", "format"]),
    ("max_bucket", &["buckets_path", "gap_policy", "format"]),
    ("min_bucket", &["buckets_path", "gap_policy", "format"]),
    ("sum_bucket", &["buckets_path", "gap_policy", "format"]),
];

fn options_of(
    table: &[(&str, &'static [&'static str])],
    kind: &str,
) -> Option<&'static [&'static str]> {
    table
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, keys)| *keys)
}

fn check_options(kind: &str, body: &JsonValue, path: &str) -> Result<(), ApiError> {
    // Others: the body is a query, checked as one; unknown types are refused where built.
    let Some(known) = options_of(AGG_OPTIONS, kind) else {
        return Ok(());
    };
    let Some(options) = body.as_object() else {
        return Err(bad(format!("{path}: expected an object of options")));
    };
    for (key, value) in options {
        if !known.contains(&key.as_str()) {
            return Err(bad(format!(
                "unsupported: {path}.{key} (Quarry takes {} here)",
                known.join(", ")
            )));
        }
        let supported = match (kind, key.as_str()) {
            ("terms", "show_term_doc_count_error") => value.is_boolean(),
            ("terms", "shard_min_doc_count") => value.as_u64().is_some(),
            _ => true,
        };
        if !supported {
            return Err(bad(format!("unsupported: {path}.{key} = {value}")));
        }
    }
    Ok(())
}

/// A pipeline aggregation, or `None` when `kind` is not one.
fn parse_pipeline(
    name: &str,
    kind: &str,
    body: &JsonValue,
    path: &str,
) -> Result<Option<Pipeline>, ApiError> {
    let Some(known) = options_of(PIPELINE_OPTIONS, kind) else {
        return Ok(None);
    };
    let object = body
        .as_object()
        .ok_or_else(|| bad(format!("{path}: expected an object")))?;
    for (key, value) in object {
        if !known.contains(&key.as_str()) {
            return Err(bad(format!(
                "unsupported: {path}.{key} (Quarry takes {} here)",
                known.join(", ")
            )));
        }
        // A number format is how values are shown as text: Quarry shows none.
        if key == "format" {
            return Err(bad(format!("unsupported: {path}.format = {value}")));
        }
    }
    let paths: Vec<(String, String)> = match body.get("buckets_path") {
        Some(JsonValue::String(one)) if kind != "bucket_script" => {
            vec![(String::new(), one.clone())]
        }
        Some(JsonValue::Object(named)) if kind == "bucket_script" => named
            .iter()
            .map(|(var, p)| {
                p.as_str()
                    .map(|p| (var.clone(), p.to_owned()))
                    .ok_or_else(|| bad(format!("{path}.buckets_path.{var}: expected a path")))
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(bad(format!(
                "{path}.buckets_path: expected {}, got {}",
                if kind == "bucket_script" {
                    "an object of named paths"
                } else {
                    "a path"
                },
                other.map_or("nothing".to_owned(), JsonValue::to_string)
            )))
        }
    };
    let insert_zeros = match body.get("gap_policy").map(|v| v.as_str()) {
        None | Some(Some("skip")) => false,
        Some(Some("insert_zeros")) => true,
        Some(_) => return Err(bad(format!("{path}.gap_policy: skip or insert_zeros"))),
    };
    let whole = |key: &str, default: u64| -> Result<u64, ApiError> {
        count_option(body, key, default, path)
    };
    let script = || -> Result<String, ApiError> {
        match body.get("script") {
            Some(JsonValue::String(s)) => Ok(s.clone()),
            Some(JsonValue::Object(o)) => {
                if let Some(key) = o
                    .keys()
                    .find(|k| !matches!(k.as_str(), "source" | "inline" | "lang"))
                {
                    return Err(bad(format!("unsupported: {path}.script.{key}")));
                }
                if o.get("lang")
                    .is_some_and(|l| l != "painless" && l != "expression")
                {
                    return Err(bad(format!("unsupported: {path}.script.lang")));
                }
                o.get("source")
                    .or(o.get("inline"))
                    .and_then(JsonValue::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| bad(format!("{path}.script: expected source")))
            }
            _ => Err(bad(format!("{path}.script: expected a script"))),
        }
    };
    let kind = match kind {
        "derivative" => PipelineKind::Derivative,
        "cumulative_sum" => PipelineKind::CumulativeSum,
        "serial_diff" => PipelineKind::SerialDiff {
            lag: whole("lag", 1)?.max(1) as usize,
        },
        "moving_avg" => {
            if body.get("model").is_some_and(|m| m != "simple") {
                return Err(bad(format!("unsupported: {path}.model (only simple)")));
            }
            PipelineKind::MovingAvg {
                window: whole("window", 5)?.max(1) as usize,
            }
        }
        "moving_fn" => {
            let source = script()?;
            let function = moving_function(&source)
                .ok_or_else(|| bad(format!("unsupported: {path}.script [{source}] (Quarry runs no scripts; it knows MovingFunctions.max, min, sum, unweightedAvg, linearWeightedAvg and stdDev of values)")))?;
            let window = body
                .get("window")
                .and_then(JsonValue::as_u64)
                .filter(|w| *w > 0)
                .ok_or_else(|| bad(format!("{path}.window: expected a whole number > 0")))?;
            PipelineKind::MovingFn {
                window: window as usize,
                shift: body.get("shift").and_then(JsonValue::as_i64).unwrap_or(0),
                function,
            }
        }
        "bucket_script" => {
            let source = script()?;
            PipelineKind::BucketScript(Expr::parse(&source).map_err(|e| bad(format!("unsupported: {path}.script [{source}]: {e} (Quarry runs no scripts; it evaluates arithmetic over params)")))?)
        }
        "avg_bucket" => PipelineKind::Sibling(SiblingKind::Avg),
        "max_bucket" => PipelineKind::Sibling(SiblingKind::Max),
        "min_bucket" => PipelineKind::Sibling(SiblingKind::Min),
        _ => PipelineKind::Sibling(SiblingKind::Sum),
    };
    Ok(Some(Pipeline {
        name: name.to_owned(),
        kind,
        paths,
        insert_zeros,
    }))
}

/// The `MovingFunctions` call a `moving_fn` script is, when it is exactly one of them.
fn moving_function(source: &str) -> Option<MovingFunction> {
    let compact: String = source.chars().filter(|c| !c.is_whitespace()).collect();
    let compact = compact.trim_end_matches(';');
    Some(match compact {
        "MovingFunctions.max(values)" => MovingFunction::Max,
        "MovingFunctions.min(values)" => MovingFunction::Min,
        "MovingFunctions.sum(values)" => MovingFunction::Sum,
        "MovingFunctions.unweightedAvg(values)" => MovingFunction::UnweightedAvg,
        "MovingFunctions.linearWeightedAvg(values)" => MovingFunction::LinearWeightedAvg,
        "MovingFunctions.stdDev(values,MovingFunctions.unweightedAvg(values))" => {
            MovingFunction::StdDev
        }
        _ => return None,
    })
}

/// Arithmetic over `params.NAME` (`bucket_script`): numbers, `+ - * /`, parentheses.
#[derive(Clone, Debug)]
enum Expr {
    Number(f64),
    Param(String),
    Negate(Box<Expr>),
    Binary(Box<Expr>, char, Box<Expr>),
}

impl Expr {
    fn parse(text: &str) -> Result<Expr, String> {
        let tokens = expr_tokens(text)?;
        let mut at = 0;
        let expr = Expr::sum(&tokens, &mut at)?;
        if at != tokens.len() {
            return Err(format!("unexpected {:?}", tokens[at]));
        }
        Ok(expr)
    }

    fn sum(tokens: &[String], at: &mut usize) -> Result<Expr, String> {
        Expr::left_to_right(tokens, at, "+-", Expr::product)
    }

    fn product(tokens: &[String], at: &mut usize) -> Result<Expr, String> {
        Expr::left_to_right(tokens, at, "*/", Expr::unary)
    }

    /// Operands read by `operand`, joined left to right by any of the one-character
    /// `operators`.
    fn left_to_right(
        tokens: &[String],
        at: &mut usize,
        operators: &str,
        operand: fn(&[String], &mut usize) -> Result<Expr, String>,
    ) -> Result<Expr, String> {
        let mut left = operand(tokens, at)?;
        while let Some(op) = tokens.get(*at).and_then(|t| {
            t.chars()
                .next()
                .filter(|c| t.len() == 1 && operators.contains(*c))
        }) {
            *at += 1;
            left = Expr::Binary(Box::new(left), op, Box::new(operand(tokens, at)?));
        }
        Ok(left)
    }

    fn unary(tokens: &[String], at: &mut usize) -> Result<Expr, String> {
        let token = tokens.get(*at).ok_or("the expression ends early")?;
        *at += 1;
        match token.as_str() {
            "-" => Ok(Expr::Negate(Box::new(Expr::unary(tokens, at)?))),
            "(" => {
                let inner = Expr::sum(tokens, at)?;
                if tokens.get(*at).map(String::as_str) != Some(")") {
                    return Err("a `(` is not closed".into());
                }
                *at += 1;
                Ok(inner)
            }
            t => {
                if let Some(name) = t.strip_prefix("params.") {
                    return Ok(Expr::Param(name.to_owned()));
                }
                t.parse::<f64>()
                    .map(Expr::Number)
                    .map_err(|_| format!("unexpected {t:?}"))
            }
        }
    }

    fn eval(&self, params: &[(&str, f64)]) -> f64 {
        match self {
            Expr::Number(v) => *v,
            Expr::Param(name) => params
                .iter()
                .find(|(n, _)| n == name)
                .map_or(f64::NAN, |(_, v)| *v),
            Expr::Negate(inner) => -inner.eval(params),
            Expr::Binary(a, op, b) => {
                let (a, b) = (a.eval(params), b.eval(params));
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    _ => a / b,
                }
            }
        }
    }
}

fn expr_tokens(text: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.trim().trim_end_matches(';').chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if "+-*/()".contains(c) {
            tokens.push(c.to_string());
            chars.next();
        } else if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            let mut token = String::new();
            while let Some(&c) = chars
                .peek()
                .filter(|c| c.is_ascii_alphanumeric() || **c == '.' || **c == '_')
            {
                token.push(c);
                chars.next();
            }
            tokens.push(token);
        } else {
            return Err(format!("unexpected {c:?}"));
        }
    }
    Ok(tokens)
}

/// How a date is shown as text (`format` of date aggregations): Elasticsearch's named formats
/// and patterns of `yyyy MM dd HH mm ss SSS`, `'quoted'` text and `XXX` offsets.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum DateFormat {
    EpochMillis,
    EpochSecond,
    Pattern(Vec<Piece>),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Piece {
    Text(String),
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Millis,
    /// `Z` at UTC, else `+01:00`.
    Offset,
}

impl DateFormat {
    pub(crate) fn iso() -> DateFormat {
        DateFormat::parse("yyyy-MM-dd'T'HH:mm:ss.SSSXXX").unwrap_or(DateFormat::EpochMillis)
    }

    pub(crate) fn parse(text: &str) -> Result<DateFormat, String> {
        // A list prints with its first format.
        let first = text.split("||").next().unwrap_or(text).trim();
        match first {
            "epoch_millis" => return Ok(DateFormat::EpochMillis),
            "epoch_second" => return Ok(DateFormat::EpochSecond),
            "strict_date_optional_time"
            | "date_optional_time"
            | "strict_date_time"
            | "date_time"
            | "strict_date_optional_time_nanos"
            | "iso8601" => return Ok(DateFormat::iso()),
            "strict_date" | "date" | "year_month_day" | "strict_year_month_day" => {
                return DateFormat::parse("yyyy-MM-dd")
            }
            "basic_date" => return DateFormat::parse("yyyyMMdd"),
            "strict_date_hour_minute_second" | "date_hour_minute_second" => {
                return DateFormat::parse("yyyy-MM-dd'T'HH:mm:ss")
            }
            "strict_year_month" | "year_month" => return DateFormat::parse("yyyy-MM"),
            "strict_year" | "year" => return DateFormat::parse("yyyy"),
            _ => {}
        }
        let mut pieces = Vec::new();
        let mut chars = first.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                let mut literal = String::new();
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    literal.push(c);
                }
                pieces.push(Piece::Text(if literal.is_empty() {
                    "'".into()
                } else {
                    literal
                }));
                continue;
            }
            if !c.is_ascii_alphabetic() {
                pieces.push(Piece::Text(c.to_string()));
                continue;
            }
            let mut run = 1;
            while chars.next_if_eq(&c).is_some() {
                run += 1;
            }
            pieces.push(match (c, run) {
                ('y' | 'u', 4) => Piece::Year,
                ('M', 2) => Piece::Month,
                ('d', 2) => Piece::Day,
                ('H', 2) => Piece::Hour,
                ('m', 2) => Piece::Minute,
                ('s', 2) => Piece::Second,
                ('S', 3) => Piece::Millis,
                ('X', 3) | ('Z', 5) => Piece::Offset,
                _ => return Err(format!("[{text}]: the pattern letter {} is not supported (yyyy MM dd HH mm ss SSS XXX and named formats are)", c.to_string().repeat(run))),
            });
        }
        Ok(DateFormat::Pattern(pieces))
    }

    /// `nanos` as text in `zone`.
    pub(crate) fn format(&self, nanos: i64, zone: Zone) -> String {
        use chrono::{Datelike, Timelike};
        match self {
            DateFormat::EpochMillis => nanos.div_euclid(1_000_000).to_string(),
            DateFormat::EpochSecond => nanos.div_euclid(1_000_000_000).to_string(),
            DateFormat::Pattern(pieces) => {
                let local = zone.local_of(nanos);
                let mut out = String::new();
                for piece in pieces {
                    match piece {
                        Piece::Text(t) => out.push_str(t),
                        Piece::Year => out.push_str(&format!("{:04}", local.year())),
                        Piece::Month => out.push_str(&format!("{:02}", local.month())),
                        Piece::Day => out.push_str(&format!("{:02}", local.day())),
                        Piece::Hour => out.push_str(&format!("{:02}", local.hour())),
                        Piece::Minute => out.push_str(&format!("{:02}", local.minute())),
                        Piece::Second => out.push_str(&format!("{:02}", local.second())),
                        Piece::Millis => {
                            out.push_str(&format!("{:03}", local.nanosecond() / 1_000_000 % 1000))
                        }
                        Piece::Offset => {
                            let seconds = zone.offset_at(nanos);
                            if seconds == 0 {
                                out.push('Z');
                            } else {
                                let sign = if seconds < 0 { '-' } else { '+' };
                                let seconds = seconds.abs();
                                out.push_str(&format!(
                                    "{sign}{:02}:{:02}",
                                    seconds / 3600,
                                    seconds % 3600 / 60
                                ));
                            }
                        }
                    }
                }
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{mix64, partition_of};
    use quarry_query::agg_tree::TermKey;

    /// Golden values from Lucene 9.12's `StringHelper.murmurhash3_x86_32(bytes, 31)` and
    /// HPPC 0.10's `BitMixer.mix64`, each with `Math.floorMod` by 2 and by 7 (run on Java 17).
    #[test]
    fn partitions_hash_as_elasticsearch_does() {
        let strings: &[(&str, u64, u64)] = &[
            ("abc", 1, 6),
            ("bcd", 0, 2),
            ("", 1, 4),
            ("web-1", 1, 1),
            ("héllo", 0, 3),
            ("error", 1, 2),
            ("a longer string of text", 1, 3),
        ];
        for &(text, by2, by7) in strings {
            let key = TermKey::Str(text.to_owned());
            assert_eq!(partition_of(&key, false, 2), Some(by2), "{text}");
            assert_eq!(partition_of(&key, false, 7), Some(by7), "{text}");
        }
        let longs: &[(i64, i64, u64, u64)] = &[
            (0, 0, 0, 0),
            (1, -2508561340476696217, 1, 1),
            (2, -5300069141818320379, 1, 1),
            (3, -5476814187786781820, 0, 6),
            (-1, 8912229458432966433, 1, 5),
            (1234567890123, 8547740970553410444, 0, 0),
            (i64::MIN, -6559957559849290354, 0, 5),
            (i64::MAX, -4767257309785776240, 0, 6),
            (100, 5244487542641613983, 1, 3),
            (42, -335292003828100895, 1, 5),
        ];
        for &(value, hash, by2, by7) in longs {
            assert_eq!(mix64(value), hash, "{value}");
            let key = TermKey::Int(value);
            assert_eq!(partition_of(&key, false, 2), Some(by2), "{value}");
            assert_eq!(partition_of(&key, false, 7), Some(by7), "{value}");
        }
    }
}
