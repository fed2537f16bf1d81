//! [`Approvals`]: the calls that wait for a person's answer.

use super::{Held, owned};
use crate::approvals::ApprovalRequest;
use crate::store::{StateStore, StoreError};

/// The approval requests as a door shows and answers them. Made by
/// [`Host::approvals`](crate::Host::approvals).
#[derive(Clone)]
pub struct Approvals<'h> {
    store: Held<'h, StateStore>,
}

impl<'h> Approvals<'h> {
    pub(super) fn new(store: Held<'h, StateStore>) -> Self {
        Self { store }
    }

    /// The same service, owning what it holds: for a task that outlives the host's borrow.
    pub fn detached(&self) -> Approvals<'static> {
        Approvals {
            store: owned(&self.store),
        }
    }

    /// Requests, newest first, at most `limit`: only the pending ones unless `all`.
    pub fn list(&self, all: bool, limit: usize) -> Result<Vec<ApprovalRequest>, StoreError> {
        self.store.approvals(all, limit)
    }

    /// One request.
    pub fn get(&self, id: &str) -> Result<Option<ApprovalRequest>, StoreError> {
        self.store.approval(id)
    }

    /// Answers a pending request as `by`; with `remember`, a yes also stands for the same
    /// call (tool and arguments) of the same owner later.
    /// `None` when there is no such request; the request as it stands otherwise (already
    /// answered or expired: unchanged).
    pub fn answer(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        remember: bool,
    ) -> Result<Option<ApprovalRequest>, StoreError> {
        self.store.answer_approval(id, approve, by, remember)
    }

    /// As [`Approvals::answer`], saying too whether this answer was the one taken
    /// (`false`: it had been answered, or had expired, before).
    pub fn answer_once(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        remember: bool,
    ) -> Result<Option<(bool, ApprovalRequest)>, StoreError> {
        self.store.answer_approval_once(id, approve, by, remember)
    }
}
