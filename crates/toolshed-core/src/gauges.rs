//! Gauges plugins register for the metrics endpoint: a name, a help line and a function
//! that reads the current value (live command sessions, background processes).

use std::sync::{Arc, RwLock};

type Read = Arc<dyn Fn() -> f64 + Send + Sync>;

/// The gauges of a host, one of the services its tools are built with.
#[derive(Default)]
pub struct Gauges {
    items: RwLock<Vec<(String, String, Read)>>,
}

impl std::fmt::Debug for Gauges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gauges({} registered)", self.read_all().len())
    }
}

impl Gauges {
    /// No gauges.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a gauge (a Prometheus metric name such as `toolshed_live_sessions`).
    pub fn register(
        &self,
        name: impl Into<String>,
        help: impl Into<String>,
        read: impl Fn() -> f64 + Send + Sync + 'static,
    ) {
        let mut items = self.items.write().unwrap_or_else(|p| p.into_inner());
        items.push((name.into(), help.into(), Arc::new(read)));
    }

    /// Every gauge's name, help and current value.
    pub fn read_all(&self) -> Vec<(String, String, f64)> {
        let items = self.items.read().unwrap_or_else(|p| p.into_inner());
        items
            .iter()
            .map(|(name, help, read)| (name.clone(), help.clone(), read()))
            .collect()
    }
}
