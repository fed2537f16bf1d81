//! Questions for a person that the calling client could not put to them (a REST call, or an
//! MCP client without elicitation): kept here, listed by `GET /api/v1/questions`, and
//! answered by `POST /api/v1/questions/ID/answer` — or, unanswered, refused when the asking
//! call's deadline passes. They live in this process: a replica answers its own.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;
use toolshed_core::{Answer, Asker, CancellationToken, Question, ToolError};

/// The most questions waiting at once, all owners together.
pub const MAX_PENDING: usize = 64;
/// The most questions one owner's calls keep waiting at once.
pub const MAX_PENDING_PER_OWNER: usize = 8;

/// A question waiting for its answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingQuestion {
    /// Its id (`q-…`).
    pub id: String,
    /// The owner whose call asks.
    pub owner: String,
    /// What the person reads.
    pub message: String,
    /// The answer's shape (an object schema).
    pub schema: Value,
    /// When it was asked (Unix ms).
    pub created_ms: i64,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No such question waits (never asked, answered, or its call ended).
    #[error("no question `{0}` is waiting; GET /api/v1/questions lists those that are")]
    NotFound(String),
    /// The question belongs to another owner's call.
    #[error("question `{0}` is another owner's to answer")]
    NotYours(String),
}

struct Waiting {
    question: PendingQuestion,
    reply: oneshot::Sender<Answer>,
}

/// Every question waiting in this process.
#[derive(Default)]
pub struct Questions {
    waiting: Mutex<BTreeMap<String, Waiting>>,
}

impl std::fmt::Debug for Questions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Questions").finish_non_exhaustive()
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Whether `owner` is `base` or one of its sub-owners (`alice/agent-3` of `alice`).
fn owned_by(owner: &str, base: &str) -> bool {
    owner == base
        || owner
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

impl Questions {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Waiting>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The questions waiting, oldest first: all of them, or those of `owner`'s calls (its
    /// sub-owners' too).
    pub fn pending(&self, owner: Option<&str>) -> Vec<PendingQuestion> {
        let mut all: Vec<PendingQuestion> = self
            .lock()
            .values()
            .filter(|w| owner.is_none_or(|o| owned_by(&w.question.owner, o)))
            .map(|w| w.question.clone())
            .collect();
        all.sort_by_key(|q| q.created_ms);
        all
    }

    /// Answers question `id`; `owner`, when given, must be the asking call's owner (or the
    /// owner it is a sub-owner of).
    pub fn answer(
        &self,
        id: &str,
        answer: Answer,
        owner: Option<&str>,
    ) -> Result<PendingQuestion, AnswerError> {
        let mut waiting = self.lock();
        let question = &waiting
            .get(id)
            .ok_or_else(|| AnswerError::NotFound(id.to_string()))?
            .question;
        if owner.is_some_and(|o| !owned_by(&question.owner, o)) {
            return Err(AnswerError::NotYours(id.to_string()));
        }
        let Some(w) = waiting.remove(id) else {
            return Err(AnswerError::NotFound(id.to_string()));
        };
        // The call may have ended a moment ago; the answer then goes nowhere.
        let _ = w.reply.send(answer);
        Ok(w.question)
    }

    /// Keeps `question` for `owner`'s call until it is answered or `cancel` fires.
    pub async fn ask(
        &self,
        owner: &str,
        question: &Question,
        cancel: &CancellationToken,
    ) -> Result<Answer, ToolError> {
        let (reply, answered) = oneshot::channel();
        let id = {
            let mut waiting = self.lock();
            let base = owner.split('/').next().unwrap_or(owner);
            let mine = waiting
                .values()
                .filter(|w| owned_by(&w.question.owner, base))
                .count();
            if mine >= MAX_PENDING_PER_OWNER || waiting.len() >= MAX_PENDING {
                return Err(ToolError::RateLimited {
                    message: format!(
                        "{mine} questions of `{base}` are waiting for a person ({} in all; at \
                         most {MAX_PENDING_PER_OWNER} per owner, {MAX_PENDING} in all); answer \
                         or wait for those first",
                        waiting.len()
                    ),
                    retry_after: std::time::Duration::from_secs(5),
                });
            }
            let id = format!(
                "q-{}",
                toolshed_core::secret::random_hex(8)
                    .map_err(|e| ToolError::Failed(format!("no random id for a question: {e}")))?
            );
            waiting.insert(
                id.clone(),
                Waiting {
                    question: PendingQuestion {
                        id: id.clone(),
                        owner: owner.to_string(),
                        message: question.message.clone(),
                        schema: question.schema.clone(),
                        created_ms: now_ms(),
                    },
                    reply,
                },
            );
            id
        };
        tracing::info!(question = %id, owner, "a question waits for a person's answer over REST");
        // Gone with this wait however it ends: answered, the call's end, or the future
        // dropped (a plugin runtime drops what a cancelled call left running).
        let _forget = Forget {
            questions: self,
            id: id.clone(),
        };
        let outcome = tokio::select! {
            answer = answered => answer.map_err(|_| ToolError::Failed(format!("question {id} went away unanswered"))),
            () = cancel.cancelled() => Err(ToolError::Failed(format!(
                "nobody answered question {id} before the call ended; a person answers with \
                 POST /api/v1/questions/{id}/answer (or in the dashboard) while the call waits"
            ))),
        };
        outcome
    }
}

/// Removes a question when its wait ends.
struct Forget<'a> {
    questions: &'a Questions,
    id: String,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.questions.lock().remove(&self.id);
    }
}

/// The host's asker: questions wait for REST.
pub(crate) struct HostAsker {
    pub(crate) questions: Arc<Questions>,
    pub(crate) owner: String,
}

#[async_trait]
impl Asker for HostAsker {
    async fn ask(
        &self,
        question: &Question,
        cancel: &CancellationToken,
    ) -> Result<Answer, ToolError> {
        self.questions.ask(&self.owner, question, cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_question_whose_wait_is_dropped_is_forgotten() {
        let questions = Questions::default();
        let cancel = CancellationToken::new();
        let q = Question {
            message: "?".into(),
            schema: serde_json::json!({"type": "object"}),
        };
        let mut wait = Box::pin(questions.ask("alice", &q, &cancel));
        assert!(futures_poll_once(wait.as_mut()).await);
        assert_eq!(questions.pending(None).len(), 1);
        drop(wait);
        assert!(questions.pending(None).is_empty());
    }

    /// Polls `future` once; whether it is still pending.
    async fn futures_poll_once<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> bool {
        let mut future = Some(future);
        std::future::poll_fn(|cx| {
            let pending = future.take().is_some_and(|f| f.poll(cx).is_pending());
            std::task::Poll::Ready(pending)
        })
        .await
    }

    #[tokio::test]
    async fn a_question_waits_for_its_owners_answer_and_no_one_elses() {
        let questions = Arc::new(Questions::default());
        let cancel = CancellationToken::new();
        let asking = {
            let questions = questions.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                let q = Question {
                    message: "Which branch?".into(),
                    schema: serde_json::json!({"type": "object"}),
                };
                questions.ask("alice/agent-1", &q, &cancel).await
            })
        };
        let id = loop {
            if let Some(q) = questions.pending(Some("alice")).first() {
                break q.id.clone();
            }
            tokio::task::yield_now().await;
        };
        assert!(questions.pending(Some("bob")).is_empty());
        assert_eq!(
            questions.answer(&id, Answer::Decline, Some("bob")),
            Err(AnswerError::NotYours(id.clone()))
        );
        let mut content = serde_json::Map::new();
        content.insert("answer".into(), "main".into());
        questions
            .answer(
                &id,
                Answer::Accept {
                    content: content.clone(),
                },
                Some("alice"),
            )
            .unwrap();
        assert_eq!(asking.await.unwrap(), Ok(Answer::Accept { content }));
        assert!(questions.pending(None).is_empty());
        assert_eq!(
            questions.answer(&id, Answer::Decline, None),
            Err(AnswerError::NotFound(id))
        );
    }
}
