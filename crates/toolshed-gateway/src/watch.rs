//! Who watches which of a mounted server's resources (`resources/subscribe`): kept with the
//! server's [`crate::upstream::Upstream`], so that a restarted server is asked again for
//! what is still watched, and told by the session's reader when the server says a
//! resource changed (`notifications/resources/updated`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::client::Client;

use toolshed_core::ResourceUpdated;

/// The most resources of one server watched at once, all callers together.
pub(crate) const MAX_WATCHED: usize = 1024;

/// The longest one ask about a resource (subscribe, unsubscribe, a turn to ask) may take.
pub(crate) const ASK_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Default)]
pub(crate) struct Watchers {
    next: AtomicU64,
    by_uri: Mutex<HashMap<String, Vec<(u64, ResourceUpdated)>>>,
    /// The `subscriptions/listen` stream that watches a resource of a 2026-07-28 server,
    /// with the session it belongs to (an id means nothing on another).
    listens: Mutex<HashMap<String, (Weak<Client>, u64)>>,
    /// Held while the server is asked to watch or stop watching, so that asks about one
    /// resource (and a restart's asking again) come one after another.
    pub(crate) asking: tokio::sync::Mutex<()>,
}

impl Watchers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<(u64, ResourceUpdated)>>> {
        self.by_uri.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a watcher of `uri`: its id, and whether it is the first (the server is then
    /// to be asked); `None` past [`MAX_WATCHED`] resources.
    pub(crate) fn add(&self, uri: &str, updated: ResourceUpdated) -> Option<(u64, bool)> {
        let mut by_uri = self.lock();
        if !by_uri.contains_key(uri) && by_uri.len() >= MAX_WATCHED {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let watchers = by_uri.entry(uri.to_string()).or_default();
        watchers.push((id, updated));
        Some((id, watchers.len() == 1))
    }

    /// Removes watcher `id` of `uri`: whether it was the last (the server is then told).
    pub(crate) fn remove(&self, uri: &str, id: u64) -> bool {
        let mut by_uri = self.lock();
        let Some(watchers) = by_uri.get_mut(uri) else {
            return false;
        };
        watchers.retain(|(i, _)| *i != id);
        if watchers.is_empty() {
            by_uri.remove(uri);
            return true;
        }
        false
    }

    /// The server says `uri` changed: every watcher of it is told.
    pub(crate) fn updated(&self, uri: &str) {
        let told: Vec<ResourceUpdated> = self
            .lock()
            .get(uri)
            .map(|w| w.iter().map(|(_, f)| f.clone()).collect())
            .unwrap_or_default();
        for updated in told {
            updated(uri);
        }
    }

    /// Whether `uri` is already watched on `client`'s session (a listen stream of it).
    pub(crate) fn listens_on(&self, uri: &str, client: &Arc<Client>) -> bool {
        self.listens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(uri)
            .is_some_and(|(on, _)| on.upgrade().is_some_and(|on| Arc::ptr_eq(&on, client)))
    }

    /// Notes the listen stream of `client` watching `uri` (none: the legacy era's
    /// subscription).
    pub(crate) fn listening(&self, uri: &str, client: &Arc<Client>, listen: Option<u64>) {
        let mut listens = self.listens.lock().unwrap_or_else(|p| p.into_inner());
        match listen {
            Some(id) => listens.insert(uri.to_string(), (Arc::downgrade(client), id)),
            None => listens.remove(uri),
        };
    }

    /// The listen stream watching `uri` on a session still open, taken off the list.
    pub(crate) fn take_listen(&self, uri: &str) -> Option<(Arc<Client>, u64)> {
        let (client, id) = self
            .listens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uri)?;
        Some((client.upgrade()?, id))
    }

    /// Forgets every listen stream (a new session has none of the old one's).
    pub(crate) fn forget_listens(&self) {
        self.listens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Whether `uri` is watched.
    pub(crate) fn is_watched(&self, uri: &str) -> bool {
        self.lock().contains_key(uri)
    }

    /// Whether any resource is watched.
    pub(crate) fn any(&self) -> bool {
        !self.lock().is_empty()
    }

    /// The resources watched now.
    pub(crate) fn uris(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_watcher_subscribes_the_last_unsubscribes_and_each_is_told() {
        let watchers = Watchers::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let told = |tag: &'static str| -> ResourceUpdated {
            let seen = seen.clone();
            Arc::new(move |uri: &str| seen.lock().unwrap().push(format!("{tag} {uri}")))
        };
        let (a, first) = watchers.add("x://1", told("a")).unwrap();
        assert!(first);
        let (b, first) = watchers.add("x://1", told("b")).unwrap();
        assert!(!first);
        watchers.updated("x://1");
        watchers.updated("x://2");
        assert_eq!(*seen.lock().unwrap(), ["a x://1", "b x://1"]);
        assert!(!watchers.remove("x://1", a));
        assert!(watchers.remove("x://1", b));
        assert!(watchers.uris().is_empty());
    }
}
