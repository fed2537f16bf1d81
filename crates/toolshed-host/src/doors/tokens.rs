//! [`Tokens`]: agent tokens, and the key that signs what toolshed hands clients.

use std::time::Duration;

use super::{Held, owned};
use crate::identity::{NewToken, TokenRecord};
use crate::store::{StateStore, StoreError};

/// Agent tokens as a door uses them: authenticating one a request presents, and listing,
/// making and revoking them. Made by [`Host::tokens`](crate::Host::tokens).
#[derive(Clone)]
pub struct Tokens<'h> {
    store: Held<'h, StateStore>,
}

impl<'h> Tokens<'h> {
    pub(super) fn new(store: Held<'h, StateStore>) -> Self {
        Self { store }
    }

    /// The same service, owning what it holds: for a task that outlives the host's borrow.
    pub fn detached(&self) -> Tokens<'static> {
        Tokens {
            store: owned(&self.store),
        }
    }

    /// The token `presented` is, when it is a live agent token (not revoked, not expired).
    pub fn authenticate(&self, presented: &str) -> Result<Option<TokenRecord>, StoreError> {
        self.store.authenticate(presented)
    }

    /// Every agent token, newest first.
    pub fn list(&self) -> Result<Vec<TokenRecord>, StoreError> {
        self.store.tokens()
    }

    /// Makes an agent token for `owner` with `scopes` (the default ones when empty),
    /// expiring after `expires` if given; its secret is in the answer only.
    pub fn create(
        &self,
        owner: &str,
        scopes: &[String],
        expires: Option<Duration>,
    ) -> Result<NewToken, StoreError> {
        self.store.create_token(owner, scopes, expires)
    }

    /// Revokes the token `id` (or the whole token); `false` when there is no such token or
    /// it was revoked already.
    pub fn revoke(&self, id: &str) -> Result<bool, StoreError> {
        self.store.revoke_token(id)
    }

    /// The key that signs state toolshed hands a client and checks when it comes back
    /// (MCP's `requestState`), the same for every replica sharing the data dir's
    /// `secret.key`. For signing that state only.
    pub fn state_signing_key(&self) -> &[u8] {
        self.store.signing_key()
    }
}
