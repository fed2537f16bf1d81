//! Schedules run as jobs: what the schedules' loop (`crate::agents`) needs of a host.

use std::sync::Arc;

use crate::store::StateStore;
use crate::{CallRequest, Host};

impl Host {
    /// Runs the schedules of the agent tools (`schedule_create`) as they come due, until
    /// the host is dropped: a door that stays up calls it once. Toolsheds sharing a
    /// database each run it; each due time runs once.
    pub fn run_schedules(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let host: std::sync::Weak<Host> = Arc::downgrade(self);
        tokio::spawn(crate::agents::run_schedules(host))
    }
}

impl crate::agents::ScheduleHost for Host {
    fn store(&self) -> &Arc<StateStore> {
        Host::store(self)
    }

    fn workspace_name(&self) -> &str {
        Host::workspace_name(self)
    }

    fn start_job(
        self: Arc<Self>,
        request: CallRequest,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        let span = tracing::info_span!("schedule", tool = %request.tool);
        let jobs = self.jobs().clone();
        Ok(jobs
            .start(self, request, Box::new(()), span)
            .map(|view| view.id)?)
    }
}
