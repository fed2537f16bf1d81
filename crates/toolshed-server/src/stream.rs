//! `GET /events` (Server-Sent Events) and `GET /events/ws` (WebSocket): the live event log,
//! filtered by job or owner, resumable from the last event id while it is retained.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use toolshed_host::identity::Caller;

use crate::api::{AppState, query};
use crate::error::ApiError;
use crate::events::{ApiEvent, Filter};

/// Query parameters of the event streams.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventQuery {
    /// Only this job's events.
    pub job: Option<String>,
    /// Only the events of this owner's jobs (plugin events always pass).
    pub owner: Option<String>,
    /// Resume after this event id (SSE clients may send `Last-Event-ID` instead).
    #[schemars(range(max = 9_007_199_254_740_991u64))]
    pub last_event_id: Option<u64>,
}

/// What the admin token's (and the dashboard's) work counts against in per-owner limits:
/// a name no owner id can have (owner ids have no parentheses).
pub(crate) const ADMIN_ACCOUNT: &str = "(admin)";

/// What a caller's work counts against in per-owner limits: an agent token's owner (a
/// sub-owner counted as its owner), or [`ADMIN_ACCOUNT`].
pub(crate) fn account_of(caller: Option<&Caller>) -> String {
    match caller {
        Some(c) if c.is_agent() => c.owner.0.split('/').next().unwrap_or_default().to_string(),
        _ => ADMIN_ACCOUNT.to_string(),
    }
}

/// The event streams open: how many in all and per owner, and how many may be.
#[derive(Debug)]
pub(crate) struct StreamSlots {
    max: usize,
    max_per_owner: usize,
    open: std::sync::Mutex<std::collections::HashMap<String, usize>>,
}

/// One open stream's place, given back when the stream ends (its client gone, the server
/// stopping).
#[derive(Debug)]
pub(crate) struct StreamSlot {
    slots: std::sync::Arc<StreamSlots>,
    account: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.account) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.account);
            }
        }
    }
}

impl StreamSlots {
    /// At most `max` streams, and `max_per_owner` of one owner.
    pub(crate) fn new(max: usize, max_per_owner: usize) -> Self {
        Self {
            max: max.max(1),
            max_per_owner: max_per_owner.max(1),
            open: Default::default(),
        }
    }

    /// A place for one more stream of `caller`, or `429` naming the caller's own count.
    fn take(self: &std::sync::Arc<Self>, caller: Option<&Caller>) -> Result<StreamSlot, ApiError> {
        let account = account_of(caller);
        let who = if account == ADMIN_ACCOUNT {
            "the admin token".to_string()
        } else {
            format!("`{account}`")
        };
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let mine = open.get(&account).copied().unwrap_or(0);
        let total: usize = open.values().sum();
        let message = if mine >= self.max_per_owner {
            format!(
                "{who} has {mine} event streams open, the most one owner may keep ([server] max_event_streams_per_owner); close one you no longer read"
            )
        } else if total >= self.max {
            format!(
                "{total} event streams are open, the most this server keeps ([server] max_event_streams), {mine} of them {who}'s; close one you no longer read"
            )
        } else {
            *open.entry(account.clone()).or_default() += 1;
            return Ok(StreamSlot {
                slots: self.clone(),
                account,
            });
        };
        let mut error = ApiError::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            message,
        );
        error.details = json!({"retry_after": 30, "open": mine});
        Err(error)
    }
}

/// The largest event id a client may name (the largest integer JSON carries exactly).
pub(crate) const MAX_EVENT_ID: u64 = 9_007_199_254_740_991;

fn checked(params: EventQuery) -> Result<EventQuery, ApiError> {
    match params.last_event_id {
        Some(id) if id > MAX_EVENT_ID => Err(ApiError::bad_request(format!(
            "last_event_id = {id} is out of range: event ids run from 1 to {MAX_EVENT_ID}"
        ))),
        _ => Ok(params),
    }
}

/// An agent token sees its own owner's job events only (plugin events pass as for
/// everyone): the owner filter is set to it, and may not name another owner.
fn scoped(mut params: EventQuery, caller: Option<&Caller>) -> Result<EventQuery, ApiError> {
    let Some(caller) = caller.filter(|c| c.is_agent()) else {
        return Ok(params);
    };
    match &params.owner {
        None => params.owner = Some(caller.owner.0.clone()),
        Some(owner) if caller.owns(owner) => {}
        Some(owner) => {
            return Err(ApiError::new(
                axum::http::StatusCode::FORBIDDEN,
                "denied",
                format!(
                    "this token belongs to `{}` and may not follow `{owner}`'s events",
                    caller.owner.0
                ),
            ));
        }
    }
    Ok(params)
}

/// One item of a stream: an event, or word that events were missed.
enum Item {
    Event(ApiEvent),
    Missed,
}

fn items(
    state: &AppState,
    params: EventQuery,
    last_id: Option<u64>,
) -> impl Stream<Item = Item> + Send + 'static {
    let filter = Filter {
        job: params.job,
        owner: params.owner,
    };
    let (backlog, missed, receiver) = state.events.subscribe(last_id, &filter);
    let start = missed.then_some(Item::Missed).into_iter();
    let backlog = backlog.into_iter().map(Item::Event);
    // Live events until the server stops; what was published before it stopped (a
    // cancelled job's `job.cancelled`) is still sent, then the stream ends.
    let stop = state.stop.clone();
    let live = futures_util::stream::unfold(
        (receiver, filter, stop, false),
        |(mut receiver, filter, stop, stopping)| async move {
            use tokio::sync::broadcast::error::{RecvError, TryRecvError};
            loop {
                let received = if stopping {
                    match receiver.try_recv() {
                        Ok(event) => Ok(event),
                        Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
                        Err(_) => return None,
                    }
                } else {
                    tokio::select! {
                        biased;
                        received = receiver.recv() => received,
                        () = stop.cancelled() => {
                            return Some((None, (receiver, filter, stop, true)));
                        }
                    }
                };
                let item = match received {
                    Ok(event) if filter.accepts(&event) => Item::Event(event),
                    Ok(_) => continue,
                    Err(RecvError::Lagged(_)) => Item::Missed,
                    Err(RecvError::Closed) => return None,
                };
                return Some((Some(item), (receiver, filter, stop, stopping)));
            }
        },
    )
    .filter_map(std::future::ready);
    futures_util::stream::iter(start.chain(backlog)).chain(live)
}

fn missed_data() -> String {
    json!({"type": "events.missed", "message": "some events were not delivered (the client fell behind, or they are no longer retained); refetch state from /api/v1/jobs and /api/v1/plugins"}).to_string()
}

/// `GET /events`.
pub(crate) async fn sse(
    State(state): State<AppState>,
    caller: Option<axum::Extension<Caller>>,
    headers: HeaderMap,
    params: Result<Query<EventQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let params = scoped(checked(query(params)?)?, caller.as_deref())?;
    let header_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(id) = header_id.filter(|id| *id > MAX_EVENT_ID) {
        return Err(ApiError::bad_request(format!(
            "Last-Event-ID {id} is out of range: event ids run from 1 to {MAX_EVENT_ID}"
        )));
    }
    let last_id = header_id.or(params.last_event_id);
    let slot = state.streams.take(caller.as_deref())?;
    let stream = items(&state, params, last_id).map(move |item| {
        let _slot = &slot;
        Ok::<_, Infallible>(match item {
            Item::Event(event) => Event::default()
                .id(event.id.to_string())
                .event(event.kind.clone())
                .data(serde_json::to_string(&event).unwrap_or_default()),
            Item::Missed => Event::default().event("events.missed").data(missed_data()),
        })
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// `GET /events/ws`.
pub(crate) async fn ws(
    State(state): State<AppState>,
    caller: Option<axum::Extension<Caller>>,
    params: Result<Query<EventQuery>, axum::extract::rejection::QueryRejection>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let params = scoped(checked(query(params)?)?, caller.as_deref())?;
    let upgrade = upgrade.map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::UPGRADE_REQUIRED,
            "upgrade_required",
            format!("this endpoint speaks WebSocket: {e}"),
        )
    })?;
    let last_id = params.last_event_id;
    let slot = state.streams.take(caller.as_deref())?;
    let stream = items(&state, params, last_id);
    Ok(upgrade
        .max_message_size(64 * 1024)
        .on_upgrade(move |socket| async move {
            pump(socket, stream).await;
            drop(slot);
        })
        .into_response())
}

async fn pump(mut socket: WebSocket, stream: impl Stream<Item = Item> + Send + 'static) {
    let mut stream = std::pin::pin!(stream);
    loop {
        tokio::select! {
            item = stream.next() => {
                let Some(item) = item else { break };
                let text = match item {
                    Item::Event(event) => serde_json::to_string(&event).unwrap_or_default(),
                    Item::Missed => missed_data(),
                };
                if socket.send(Message::Text(text.into())).await.is_err() {
                    return;
                }
            }
            incoming = socket.recv() => match incoming {
                // The client says nothing we act on; a close or an error ends the stream.
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
        }
    }
    let _ = socket.send(Message::Close(None)).await;
}
