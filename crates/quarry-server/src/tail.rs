//! Live tail: `GET /api/v1/{tenant}/tail?query=...&history=N` as Server-Sent Events.
//!
//! First the newest `history` matches already searchable (oldest of them first), then every
//! new match as it becomes searchable. The two parts meet without a gap or a repeat:
//! `LiveIndex::subscribe` takes the snapshot for the history and the receiver of newly sealed
//! memory blocks under one lock, so every event is either in the snapshot or in a block the
//! receiver gets (a seal makes a memory block of exactly the events it makes searchable).
//!
//! Each SSE event is `event: hit`, `id: <_time in ns>:<k>`, `data: {"_time", "event"}`, `k`
//! counting the events of that same time sent just before it (a request's events share their
//! ingest time). A client that reconnects with `Last-Event-ID` gets, as its history, the
//! oldest `history` matches after that event: those of later times and those of the same time
//! past the first `k + 1`. (An event that arrived meanwhile with an older `_time` is not in
//! it, and equal-time events keep their order only while their block is not merged.) A client that reads slower than events come is dropped
//! with a final `event: dropped` saying so: it is sent events at its own pace, and when the
//! blocks sealed meanwhile pass `TAIL_BACKLOG_BLOCKS` (live.rs) it is dropped; memory does not
//! grow with a slow reader.

use crate::{ApiError, AppState};
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use quarry_format::BlockReader;
use quarry_index::event::format_time;
use quarry_query::{HitEvent, SearchRequest, Searcher, SortOrder};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

/// History sent when the request does not say.
const DEFAULT_HISTORY: usize = 100;
const MAX_HISTORY: usize = 10_000;
/// SSE events queued for one client (then sending waits for the client).
const CLIENT_QUEUE: usize = 256;
/// Matches sent per newly sealed block at most (a block holds at most what one seal took).
const MAX_MATCHES_PER_BLOCK: usize = 1 << 20;

/// `GET /api/v1/{tenant}/tail`.
pub(crate) async fn tail(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = state.authorize(&tenant, &headers)?;
    let mut text = "*".to_owned();
    let mut history = DEFAULT_HISTORY;
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match &*key {
            "query" | "q" => text = value.into_owned(),
            "history" => {
                history = value
                    .parse()
                    .ok()
                    .filter(|&n| n <= MAX_HISTORY)
                    .ok_or_else(|| {
                        ApiError::bad_request(format!(
                            "history: {value:?} is not a count up to {MAX_HISTORY}"
                        ))
                    })?
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter {other:?} (query, history)"
                )))
            }
        }
    }
    // Resuming: only what came after the last event the client saw.
    let after = match headers.get("last-event-id") {
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(EventId::parse)
                .ok_or_else(|| ApiError::bad_request("Last-Event-ID is not an event id"))?,
        ),
        None => None,
    };
    if let Some(root) = state.root.clone() {
        return cluster_tail(&state, &root, &tenant.name(), text, history, after).await;
    }
    let live = tenant.live.clone();
    let (snapshot, mut sealed) = live.subscribe();
    // A bad query answers 400 now, not as an event.
    let request = history_request(&text, history, after);
    let first = state
        .search(move || snapshot.execute(&request).map_err(ApiError::from_query))
        .await?;
    let mut ids = EventIds::default();
    let history_events = history_events(&first.hits, history, after, &mut ids);
    let (sender, receiver) = mpsc::channel::<Event>(CLIENT_QUEUE);
    let schema = live.schema();
    tokio::spawn(async move {
        for event in history_events {
            if sender.send(event).await.is_err() {
                return;
            }
        }
        loop {
            let block = match next_sealed(&sender, &mut sealed).await {
                Sealed::Block(block) => block,
                Sealed::Missed(missed) => {
                    // Nothing more is kept for this client: only what is queued, then the
                    // final event.
                    drop(sealed);
                    let reason = format!(
                        "the client read slower than events came: {missed} sealed blocks were missed"
                    );
                    drop_client(&sender, reason).await;
                    return;
                }
                Sealed::End => return,
            };
            let hits = match matches_in(block, &schema, &text).await {
                Ok(hits) => hits,
                Err(message) => {
                    let _ = sender.try_send(Event::default().event("error").data(message));
                    return;
                }
            };
            for hit in hits {
                if sender.send(hit_event(&mut ids, &hit)).await.is_err() {
                    return;
                }
            }
        }
    });
    Ok(sse(receiver))
}

/// The search for a tail's history: the newest `history` matches, or after `after`, the
/// oldest `history` from its time on (past those of its time already sent, sorted out by
/// `history_events`).
fn history_request(text: &str, history: usize, after: Option<EventId>) -> SearchRequest {
    match after {
        None => SearchRequest {
            query: text.to_owned(),
            sort: SortOrder::TimeDesc,
            limit: history,
            ..SearchRequest::default()
        },
        Some(seen) => SearchRequest {
            query: text.to_owned(),
            start: seen.time,
            sort: SortOrder::TimeAsc,
            limit: history.saturating_add(seen.same_time_sent),
            ..SearchRequest::default()
        },
    }
}

/// The history's hits to send, oldest first.
fn history_hits(hits: &[HitEvent], history: usize, after: Option<EventId>) -> Vec<&HitEvent> {
    let mut kept: Vec<&HitEvent> = hits.iter().collect();
    match after {
        None => kept.reverse(),
        Some(seen) => {
            let already_sent = kept
                .iter()
                .take_while(|hit| hit.time == seen.time)
                .count()
                .min(seen.same_time_sent);
            kept.drain(..already_sent);
            kept.truncate(history);
        }
    }
    kept
}

/// The history's SSE events, numbered by `ids`.
fn history_events(
    hits: &[HitEvent],
    history: usize,
    after: Option<EventId>,
    ids: &mut EventIds,
) -> Vec<Event> {
    history_hits(hits, history, after)
        .into_iter()
        .map(|hit| hit_event(ids, hit))
        .collect()
}

/// The SSE response of the events `receiver` gets.
fn sse(receiver: mpsc::Receiver<Event>) -> Response {
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|event| (Ok::<_, std::convert::Infallible>(event), receiver))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// A tail on a node with `--peers`: every leaf that takes ingest streams its new matches
/// (`Root::tail`, opened first), the history is a cluster search, and a match the history
/// already sent is not sent again (the key: its time and event, counted: the same event
/// sent twice is two). A leaf that
/// cannot be tailed or whose stream breaks ends the stream with `event: dropped` naming it:
/// reconnecting with `Last-Event-ID` resumes without a gap.
async fn cluster_tail(
    state: &Arc<AppState>,
    root: &Arc<quarry_cluster::Root>,
    tenant: &str,
    text: String,
    history: usize,
    after: Option<EventId>,
) -> Result<Response, ApiError> {
    use quarry_cluster::TailItem;
    use quarry_query::leaf::{LeafQuery, QuerySource};
    let _ = state;
    let query = LeafQuery {
        source: QuerySource::Text(text.clone()),
        start: i64::MIN,
        end: i64::MAX,
    };
    let mut live = root
        .tail(tenant, &query)
        .await
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let request = history_request(&text, history, after);
    let first = crate::cluster_search(root, tenant, &request).await?;
    let mut sent: std::collections::HashMap<String, usize> = Default::default();
    for hit in history_hits(&first.hits, history, after) {
        *sent.entry(tail_key(hit.time, &hit.event)).or_default() += 1;
    }
    let mut ids = EventIds::default();
    let history_events = history_events(&first.hits, history, after, &mut ids);
    let (sender, receiver) = mpsc::channel::<Event>(CLIENT_QUEUE);
    tokio::spawn(async move {
        for event in history_events {
            if sender.send(event).await.is_err() {
                return;
            }
        }
        loop {
            let item = tokio::select! {
                () = sender.closed() => return,
                item = live.recv() => item,
            };
            match item {
                None => return,
                Some(TailItem::Failed { leaf, message }) => {
                    let reason = format!("node {leaf} stopped sending its events: {message}");
                    drop_client(&sender, reason).await;
                    return;
                }
                Some(TailItem::Hit { time, event, .. }) => {
                    if !sent.is_empty() {
                        let key = tail_key(time, &event);
                        if let Some(count) = sent.get_mut(&key) {
                            *count -= 1;
                            if *count == 0 {
                                sent.remove(&key);
                            }
                            continue;
                        }
                    }
                    let data = json!({"_time": format_time(time), "event": crate::native_event_json(&event)});
                    let event = Event::default()
                        .event("hit")
                        .id(ids.next(time))
                        .data(data.to_string());
                    if sender.send(event).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    Ok(sse(receiver))
}

/// What tells a match of the live streams from the same match in the history: its time and
/// event (not where it is: a flush may have moved it from a memory block to a file since).
fn tail_key(time: i64, event: &[(String, quarry_format::Value)]) -> String {
    format!(
        "{time}:{}",
        serde_json::Value::Object(crate::event_json(event))
    )
}

/// A node's part of a cluster's live tail (the leaf API's `Tail`): the matches of `text` in
/// the blocks this node seals from now on, its own ingest (blocks it opens from a shared
/// catalog are another node's, tailed there). A bad query is an error now; a root that reads
/// slower than events come gets an error, and the stream ends.
pub(crate) fn leaf_tail(
    live: Arc<crate::live::LiveIndex>,
    text: String,
) -> Result<quarry_cluster::TailReceiver, String> {
    let schema = live.schema();
    let check = SearchRequest {
        query: text.clone(),
        limit: 0,
        ..SearchRequest::default()
    };
    Searcher::from_shared_with(Vec::new(), schema.clone())
        .execute(&check)
        .map_err(|e| e.to_string())?;
    let (_, mut sealed) = live.subscribe();
    let (sender, receiver) = mpsc::channel(CLIENT_QUEUE);
    tokio::spawn(async move {
        loop {
            let block = match next_sealed(&sender, &mut sealed).await {
                Sealed::Block(block) => block,
                Sealed::Missed(missed) => {
                    let reason = format!(
                        "the root read slower than events came: {missed} sealed blocks were missed"
                    );
                    let _ = sender.send(Err(reason)).await;
                    return;
                }
                Sealed::End => return,
            };
            if block.id().is_none_or(crate::live::is_published_block) {
                continue;
            }
            let found = match matches_in(block, &schema, &text).await {
                Ok(hits) => hits
                    .into_iter()
                    .map(|hit| quarry_cluster::TailMatch {
                        time: hit.time,
                        block: hit.location.block_id,
                        doc: hit.location.doc,
                        event: hit.event,
                    })
                    .collect(),
                Err(message) => {
                    let _ = sender.send(Err(message)).await;
                    return;
                }
            };
            if sender.send(Ok(found)).await.is_err() {
                return;
            }
        }
    });
    Ok(receiver)
}

/// What a tail's stream of sealed blocks gives next (`next_sealed`).
enum Sealed {
    Block(Arc<BlockReader>),
    /// The reader fell behind: this many blocks are gone.
    Missed(u64),
    /// The index closed, or the reader `sender` sends to went away.
    End,
}

/// The next block sealed, unless the reader of `sender` goes away first.
async fn next_sealed<T>(
    sender: &mpsc::Sender<T>,
    sealed: &mut tokio::sync::broadcast::Receiver<Arc<BlockReader>>,
) -> Sealed {
    tokio::select! {
        () = sender.closed() => Sealed::End,
        received = sealed.recv() => match received {
            Ok(block) => Sealed::Block(block),
            Err(RecvError::Lagged(missed)) => Sealed::Missed(missed),
            Err(RecvError::Closed) => Sealed::End,
        },
    }
}

/// How long the final event waits for a dropped client to read what was queued before it.
const FINAL_EVENT_WAIT: Duration = Duration::from_secs(300);

/// The final event to a client that is dropped, after what is queued, once the client has
/// read enough for it (at most `FINAL_EVENT_WAIT`; then the stream just ends).
async fn drop_client(sender: &mpsc::Sender<Event>, reason: String) {
    let event = Event::default()
        .event("dropped")
        .data(json!({ "reason": reason }).to_string());
    let _ = tokio::time::timeout(FINAL_EVENT_WAIT, sender.send(event)).await;
}

/// The matches of `text` in a newly sealed block, oldest first.
async fn matches_in(
    block: Arc<BlockReader>,
    schema: &Arc<quarry_index::Schema>,
    text: &str,
) -> Result<Vec<HitEvent>, String> {
    let schema = schema.clone();
    let text = text.to_owned();
    tokio::task::spawn_blocking(move || {
        let searcher = Searcher::from_shared_with(vec![block], schema);
        let request = SearchRequest {
            query: text,
            sort: SortOrder::TimeAsc,
            limit: MAX_MATCHES_PER_BLOCK,
            ..SearchRequest::default()
        };
        let response = searcher.execute(&request).map_err(|e| e.to_string())?;
        Ok(response.hits)
    })
    .await
    .map_err(|e| e.to_string())?
}

/// An event's SSE id: its time, and how many events of that time the stream sent just
/// before it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct EventId {
    time: i64,
    /// Events of `time` sent up to and including this one.
    same_time_sent: usize,
}

impl EventId {
    /// `T:k`, or a bare `T` (then every event of time `T` counts as sent).
    fn parse(text: &str) -> Option<EventId> {
        let text = text.trim();
        Some(match text.split_once(':') {
            Some((time, k)) => EventId {
                time: time.parse().ok()?,
                same_time_sent: k.parse::<usize>().ok()?.checked_add(1)?,
            },
            None => EventId {
                time: text.parse().ok()?,
                same_time_sent: usize::MAX,
            },
        })
    }
}

/// Numbers the events of a stream (`EventId`).
#[derive(Default)]
struct EventIds {
    last: Option<(i64, usize)>,
}

impl EventIds {
    fn next(&mut self, time: i64) -> String {
        let k = match self.last {
            Some((last, k)) if last == time => k + 1,
            _ => 0,
        };
        self.last = Some((time, k));
        format!("{time}:{k}")
    }
}

fn hit_event(ids: &mut EventIds, hit: &HitEvent) -> Event {
    let (time, fields) = (hit.time, &hit.event);
    Event::default().event("hit").id(ids.next(time)).data(
        json!({"_time": format_time(time), "event": crate::native_event_json(fields)}).to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_count_events_of_the_same_time_and_parse_back() {
        let mut ids = EventIds::default();
        let made: Vec<String> = [5, 5, 5, 7, 5].into_iter().map(|t| ids.next(t)).collect();
        assert_eq!(made, ["5:0", "5:1", "5:2", "7:0", "5:0"]);
        assert_eq!(
            EventId::parse("5:2"),
            Some(EventId {
                time: 5,
                same_time_sent: 3
            })
        );
        assert_eq!(
            EventId::parse(" -9 "),
            Some(EventId {
                time: -9,
                same_time_sent: usize::MAX
            })
        );
        for bad in ["", "x", "5:", "5:x", ":1", "5:-1"] {
            assert_eq!(EventId::parse(bad), None, "{bad:?}");
        }
    }
}
