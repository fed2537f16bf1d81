//! Asking the person in the 2026-07-28 era. That era lets a server ask nothing of the
//! client in the middle of a request, so a `tools/call` that needs a person — an approval
//! policy asks for, a question `ask_user` puts — ends at once with an `input_required`
//! result: elicitations for the client to put to its user, and a `requestState` that
//! toolshed signs. The client calls again with the answers (`inputResponses`) and the
//! state; toolshed checks the signature — bound to the owner, the tool and its exact
//! arguments, and expiring — takes an approval's answer once (a replayed state finds the
//! approval answered and is refused), and runs the call again with the answers so far.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ErrorData as McpError;
use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, RequestStateCodec, SealOptions,
};
use rmcp::service::Peer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolshed_core::{Answer, Asker, CancellationToken, Question, ToolError};
use toolshed_host::Host;
use toolshed_host::approvals::{ApprovalRequest, call_digest};

/// The key of an approval among a result's `inputRequests` and a retry's
/// `inputResponses`; questions are `ask-0`, `ask-1`, … in the order the call asks them.
pub(crate) const APPROVAL: &str = "approval";

/// How long a state that carries only answers stays good.
const ANSWERS_TTL: Duration = Duration::from_secs(600);

/// What a `requestState` carries (signed, not secret: a client can read it).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct State {
    /// The approval request asked about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) approval: Option<String>,
    /// The answers to the call's questions so far, by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) answers: BTreeMap<String, Value>,
    /// The questions the last round asked (the only answers a retry may bring).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) pending: Vec<String>,
}

fn codec(host: &Host) -> Result<RequestStateCodec, McpError> {
    RequestStateCodec::try_new(host.tokens().state_signing_key().to_vec())
        .map_err(|e| McpError::internal_error(format!("request state key: {e}"), None))
}

/// What a state is bound to, besides its own content: who calls, what, with what.
fn bound_to(owner: &str, tool: &str, arguments: &Value) -> Vec<u8> {
    format!("tools/call\0{owner}\0{}", call_digest(tool, arguments)).into_bytes()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn refused(message: String) -> McpError {
    McpError::invalid_params(message, None)
}

/// The message a person reads about an approval (as the session era's elicitation says
/// it).
pub(crate) fn question(request: &ApprovalRequest) -> String {
    format!(
        "Approve this call?\n\n{}\n\n{} (rule `{}`, request {})",
        request.summary, request.reason, request.rule, request.id
    )
}

/// The elicitation that asks about an approval: accept or decline, no fields.
fn approval_request(request: &ApprovalRequest) -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question(request),
            requested_schema: ElicitationSchema::new(BTreeMap::new()),
        },
    ))
}

/// `question`'s schema as elicitation takes it.
pub(crate) fn elicitation_schema(question: &Question) -> Result<ElicitationSchema, ToolError> {
    serde_json::from_value(question.schema.clone()).map_err(|e| {
        ToolError::invalid_at(
            "/schema",
            format!("the answer's schema is not one a client can ask with: {e}"),
        )
    })
}

/// The state of a retry, checked; the empty state for a first call.
pub(crate) fn open(
    host: &Host,
    owner: &str,
    tool: &str,
    arguments: &Value,
    state: Option<&str>,
) -> Result<State, McpError> {
    let Some(state) = state else {
        return Ok(State::default());
    };
    codec(host)?
        .open_json_with(state, &bound_to(owner, tool, arguments))
        .map_err(|e| {
            refused(format!(
                "requestState refused ({e}): it was not issued by this toolshed for this call \
                 (the same owner, tool and arguments), or it expired; call again without it \
                 to be asked anew"
            ))
        })
}

/// Records the person's answer to approval `id` (from a retry's `response`) once, and
/// gives the id for the call to run with (the pipeline takes a yes for one run). An answer
/// given elsewhere first (the dashboard, the CLI) stands. `who` is recorded as the one who
/// answered; `self_answers`: the caller is an agent whose own client may not answer.
pub(crate) fn take_approval(
    host: &Host,
    id: &str,
    response: Option<&Value>,
    who: &str,
    self_answers: bool,
) -> Result<String, McpError> {
    if self_answers {
        return Err(refused(format!(
            "approval {id} cannot be answered by the caller's own client ([approvals] \
             self_approval = \"deny\"); a person answers it in the dashboard, the CLI or REST"
        )));
    }
    let response = response.ok_or_else(|| {
        refused(format!(
            "the call brings a requestState about approval {id} but no \
             `inputResponses.{APPROVAL}`: answer the elicitation it came with and send the \
             answer under that key"
        ))
    })?;
    let approve = response.get("action").and_then(Value::as_str) == Some("accept");
    match host
        .approvals()
        .answer_once(id, approve, who, false)
        .map_err(|e| McpError::internal_error(format!("approval {id}: {e}"), None))?
    {
        Some((true, _)) => Ok(id.to_string()),
        Some((false, request))
            if matches!(
                request.state,
                toolshed_host::approvals::ApprovalState::Approved
                    | toolshed_host::approvals::ApprovalState::Denied
            ) =>
        {
            Ok(id.to_string())
        }
        Some((false, request)) => Err(refused(format!(
            "approval {id} is {} (a requestState is good while its request waits); call again \
             without it to be asked anew",
            request.state.as_str()
        ))),
        None => Err(refused(format!(
            "approval {id} is gone (answered long ago and removed); call again without the \
             requestState to be asked anew"
        ))),
    }
}

/// The `input_required` result asking `requests` of the person, with `state` signed for
/// `call`, good for `ttl`.
fn input_required(
    host: &Host,
    call: &Call<'_>,
    requests: InputRequests,
    state: &State,
    ttl: Duration,
) -> Result<InputRequiredResult, McpError> {
    let context = bound_to(call.owner, call.tool, call.arguments);
    let sealed = codec(host)?
        .seal_json_with(
            state,
            &SealOptions::new()
                .associated_data(&context)
                .ttl(ttl.max(Duration::from_millis(1))),
        )
        .map_err(|e| {
            McpError::internal_error(format!("cannot sign the request state: {e}"), None)
        })?;
    Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
}

/// How long until approval `request` expires.
fn until_expiry(request: &ApprovalRequest) -> Duration {
    Duration::from_millis(u64::try_from(request.expires_ms.saturating_sub(now_ms())).unwrap_or(0))
}

/// Asks in a later request: the answers a retry brought (with those of earlier rounds) are
/// given back in order; a question with none yet is kept, and the call ends with an error
/// the door turns into an `input_required` result.
pub(crate) struct RoundTripAsker {
    answers: BTreeMap<String, Value>,
    next: AtomicUsize,
    asked: Mutex<Vec<(String, InputRequest)>>,
}

impl RoundTripAsker {
    pub(crate) fn new(answers: BTreeMap<String, Value>) -> Self {
        Self {
            answers,
            next: AtomicUsize::new(0),
            asked: Mutex::default(),
        }
    }

    /// The questions kept for the client, by key.
    pub(crate) fn asked(&self) -> Vec<(String, InputRequest)> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Every answer so far, for the next state.
    pub(crate) fn answers(&self) -> &BTreeMap<String, Value> {
        &self.answers
    }
}

#[async_trait]
impl Asker for RoundTripAsker {
    async fn ask(
        &self,
        question: &Question,
        _cancel: &CancellationToken,
    ) -> Result<Answer, ToolError> {
        let key = format!("ask-{}", self.next.fetch_add(1, Ordering::SeqCst));
        if let Some(answer) = self.answers.get(&key) {
            let answer = Answer::from_elicitation(answer).ok_or_else(|| {
                ToolError::invalid(format!(
                    "`inputResponses.{key}` is not an elicitation result ({{\"action\": \
                     \"accept\"|\"decline\"|\"cancel\", \"content\": {{…}}}}): {answer}"
                ))
            })?;
            check_answer(question, &key, &answer)?;
            return Ok(answer);
        }
        let schema = elicitation_schema(question)?;
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((
                key.clone(),
                InputRequest::Elicitation(ElicitRequest::new(
                    ElicitRequestParams::FormElicitationParams {
                        meta: None,
                        message: question.message.clone(),
                        requested_schema: schema,
                    },
                )),
            ));
        Err(ToolError::NeedsApproval(format!(
            "the person's answer ({key}) is asked for in a later request"
        )))
    }
}

/// Asks in this request: MCP elicitation to a session-era client that declared it.
pub(crate) struct ElicitAsker {
    pub(crate) peer: Peer<RoleServer>,
}

#[async_trait]
impl Asker for ElicitAsker {
    async fn ask(
        &self,
        question: &Question,
        cancel: &CancellationToken,
    ) -> Result<Answer, ToolError> {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question.message.clone(),
            requested_schema: elicitation_schema(question)?,
        };
        let result = tokio::select! {
            result = self.peer.create_elicitation(params) => result,
            () = cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let result = result
            .map_err(|e| ToolError::Failed(format!("the client could not ask the person: {e}")))?;
        Ok(match result.action {
            ElicitationAction::Accept => Answer::Accept {
                content: result
                    .content
                    .and_then(|c| c.as_object().cloned())
                    .unwrap_or_default(),
            },
            ElicitationAction::Decline => Answer::Decline,
            _ => Answer::Cancel,
        })
    }
}

/// The answers so far: the state's, and those of a retry's responses that answer the
/// questions the last round asked (no other: earlier answers are the signed state's).
pub(crate) fn with_responses(
    state: &State,
    responses: Option<&InputResponses>,
) -> BTreeMap<String, Value> {
    let mut answers = state.answers.clone();
    for (key, value) in responses.into_iter().flatten() {
        if state.pending.contains(key) {
            answers.insert(key.clone(), value.clone());
        }
    }
    answers
}

/// Whether `answer` fills in `question`'s schema: its required fields there, and each
/// field of a declared kind (and one of its `enum`).
pub(crate) fn check_answer(
    question: &Question,
    key: &str,
    answer: &Answer,
) -> Result<(), ToolError> {
    let Answer::Accept { content } = answer else {
        return Ok(());
    };
    let bad = |why: String| ToolError::invalid(format!("the answer `{key}` {why}"));
    let schema = &question.schema;
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        if !content.contains_key(name) {
            return Err(bad(format!("lacks the required field `{name}`")));
        }
    }
    for (name, value) in content {
        let Some(property) = schema["properties"].get(name) else {
            return Err(bad(format!(
                "has `{name}`, which the question did not ask for"
            )));
        };
        let fits = match property["type"].as_str() {
            Some("string") => value.is_string(),
            Some("boolean") => value.is_boolean(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("number") => value.is_number(),
            _ => false,
        };
        let listed = property["enum"]
            .as_array()
            .is_none_or(|choices| choices.contains(value));
        if !fits || !listed {
            return Err(bad(format!(
                "has `{name}` = {value}, which the question's schema does not allow"
            )));
        }
    }
    Ok(())
}

/// The call a request state is for.
pub(crate) struct Call<'a> {
    pub(crate) owner: &'a str,
    pub(crate) tool: &'a str,
    /// As the client sent them.
    pub(crate) arguments: &'a Value,
}

/// What a call that ended waiting for the person answers: an approval it left pending
/// (`asked`), else the questions it asked (`round_trip`); `None` when it waits for nothing.
pub(crate) fn still_asking(
    host: &Host,
    call: Call<'_>,
    asked: Option<ApprovalRequest>,
    round_trip: Option<&RoundTripAsker>,
) -> Option<Result<InputRequiredResult, McpError>> {
    let answers = round_trip.map(|a| a.answers().clone()).unwrap_or_default();
    let (requests, state, ttl) = if let Some(asked) = asked {
        let requests = BTreeMap::from([(APPROVAL.to_string(), approval_request(&asked))]);
        let state = State {
            approval: Some(asked.id.clone()),
            answers,
            pending: Vec::new(),
        };
        (requests, state, until_expiry(&asked))
    } else {
        let questions = round_trip.map(RoundTripAsker::asked).unwrap_or_default();
        if questions.is_empty() {
            return None;
        }
        // An approval this run used is spent: a later round asks anew.
        let state = State {
            approval: None,
            answers,
            pending: questions.iter().map(|(key, _)| key.clone()).collect(),
        };
        (questions.into_iter().collect(), state, ANSWERS_TTL)
    };
    Some(input_required(host, &call, requests, &state, ttl))
}
