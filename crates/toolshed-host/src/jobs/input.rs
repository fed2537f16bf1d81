//! A job's questions for the person, as an MCP task puts them: listed with the job
//! (`inputRequests` of `tasks/get`) until `tasks/update` answers them.

use serde_json::{Value, json};

use super::{Jobs, now_ms, number};

impl Jobs {
    /// Puts `request` — an MCP input request, `{"method": "elicitation/create", "params":
    /// …}` — to whoever follows job `id`: `tasks/get` shows it under `inputRequests` until
    /// [`Jobs::answer_input`] brings the answer. Its key, and where the answer arrives;
    /// `None` when the job does not run here.
    pub fn wait_for_input(
        &self,
        id: &str,
        request: Value,
    ) -> Option<(String, tokio::sync::oneshot::Receiver<Value>)> {
        let n = number(id)?;
        let mut jobs = self.lock();
        let job = jobs.get_mut(&n)?;
        let key = format!("ask-{}", job.asked);
        job.asked += 1;
        let (tx, rx) = tokio::sync::oneshot::channel();
        job.waiting.insert(key.clone(), tx);
        let requests = job.view.input_requests.get_or_insert_with(|| json!({}));
        requests[key.as_str()] = request;
        job.view.updated_ms = Some(now_ms());
        Some((key, rx))
    }

    /// Takes job `id`'s question `key` off the list (answered, or no longer asked).
    pub fn input_done(&self, id: &str, key: &str) {
        let Some(n) = number(id) else { return };
        let mut jobs = self.lock();
        let Some(job) = jobs.get_mut(&n) else { return };
        job.waiting.remove(key);
        if let Some(Value::Object(requests)) = &mut job.view.input_requests {
            requests.remove(key);
            if requests.is_empty() {
                job.view.input_requests = None;
            }
        }
    }

    /// Hands answers (key → the request's result) to job `id`'s waiting questions; keys not
    /// waiting are left, as the Tasks extension says. How many were taken.
    pub fn answer_input(&self, id: &str, responses: &serde_json::Map<String, Value>) -> usize {
        let Some(n) = number(id) else { return 0 };
        let mut jobs = self.lock();
        let Some(job) = jobs.get_mut(&n) else {
            return 0;
        };
        let mut taken = 0;
        for (key, answer) in responses {
            if let Some(reply) = job.waiting.remove(key) {
                taken += usize::from(reply.send(answer.clone()).is_ok());
            }
        }
        taken
    }
}
