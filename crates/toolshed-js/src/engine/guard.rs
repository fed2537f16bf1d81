//! The interrupt guard: decides when running JavaScript must stop.
//!
//! QuickJS polls an interrupt handler while bytecode runs. The guard is armed only while
//! the host lets JavaScript run (evaluating, calling `activate` or `run`, running promise
//! jobs, settling host promises) and says "stop" once the current CPU slice, the call's
//! wall-clock deadline, its cancellation or the plugin's shutdown has passed. An interrupt
//! cannot be caught by `try/catch` in the script. While the host waits for a host promise
//! no JavaScript runs, so the guard is paused and the CPU slice starts again on resumption.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use toolshed_core::CancellationToken;

/// Why JavaScript was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The CPU slice (`cpu_per_call`, or `activate_timeout` while activating) ran out.
    Cpu,
    /// The call's deadline passed.
    Wall,
    /// The caller cancelled.
    Cancelled,
    /// The plugin is being stopped.
    Shutdown,
}

/// The state the interrupt handler reads. Lives on the plugin's thread.
pub(crate) struct Guard {
    cpu_deadline: Cell<Option<Instant>>,
    wall_deadline: Cell<Option<Instant>>,
    cancel: RefCell<Option<CancellationToken>>,
    shutdown: CancellationToken,
    /// Set while `deactivate` runs after the shutdown: then only its deadlines stop it.
    stopping: Cell<bool>,
    fired: Cell<Option<Stop>>,
}

impl Guard {
    /// A disarmed guard that also stops everything once `shutdown` fires.
    pub(crate) fn new(shutdown: CancellationToken) -> Self {
        Self {
            cpu_deadline: Cell::new(None),
            wall_deadline: Cell::new(None),
            cancel: RefCell::new(None),
            shutdown,
            stopping: Cell::new(false),
            fired: Cell::new(None),
        }
    }

    /// Starts a new piece of work: forgets an earlier stop, sets the wall deadline and
    /// cancellation, and arms a fresh CPU slice.
    pub(crate) fn begin(&self, cpu: Duration, wall: Instant, cancel: Option<CancellationToken>) {
        self.fired.set(None);
        self.wall_deadline.set(Some(wall));
        *self.cancel.borrow_mut() = cancel;
        self.resume(cpu);
    }

    /// Arms a fresh CPU slice (after waiting for the host).
    pub(crate) fn resume(&self, cpu: Duration) {
        self.cpu_deadline.set(Some(Instant::now() + cpu));
    }

    /// Pauses the CPU slice while the host waits; no JavaScript runs then.
    pub(crate) fn pause(&self) {
        self.cpu_deadline.set(None);
    }

    /// From now on the shutdown no longer stops JavaScript, only the deadlines do: for the
    /// plugin's `deactivate`, which runs because it is shutting down.
    pub(crate) fn stopping(&self) {
        self.stopping.set(true);
    }

    /// Whether the shutdown stops JavaScript (see [`Guard::stopping`]).
    pub(crate) fn shutdown_stops(&self) -> bool {
        !self.stopping.get()
    }

    /// Disarms the guard entirely.
    pub(crate) fn end(&self) {
        self.cpu_deadline.set(None);
        self.wall_deadline.set(None);
        *self.cancel.borrow_mut() = None;
    }

    /// Why JavaScript was stopped since [`Guard::begin`], if it was.
    pub(crate) fn fired(&self) -> Option<Stop> {
        self.fired.get()
    }

    /// Whether running JavaScript must stop now; records the first reason. This is the
    /// interrupt handler.
    pub(crate) fn should_interrupt(&self) -> bool {
        if let Some(stop) = self.check() {
            if self.fired.get().is_none() {
                self.fired.set(Some(stop));
            }
            return true;
        }
        false
    }

    /// The reason JavaScript may not run now, without recording it.
    pub(crate) fn check(&self) -> Option<Stop> {
        if self.shutdown.is_cancelled() && !self.stopping.get() {
            return Some(Stop::Shutdown);
        }
        let cpu = self.cpu_deadline.get()?;
        if self
            .cancel
            .borrow()
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
        {
            return Some(Stop::Cancelled);
        }
        let now = Instant::now();
        if self.wall_deadline.get().is_some_and(|w| now >= w) {
            return Some(Stop::Wall);
        }
        (now >= cpu).then_some(Stop::Cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_only_while_armed() {
        let guard = Guard::new(CancellationToken::new());
        assert!(!guard.should_interrupt(), "disarmed");
        guard.begin(
            Duration::ZERO,
            Instant::now() + Duration::from_secs(60),
            None,
        );
        assert!(guard.should_interrupt());
        assert_eq!(guard.fired(), Some(Stop::Cpu));
        guard.pause();
        assert!(!guard.should_interrupt(), "paused while the host waits");
        let cancel = CancellationToken::new();
        guard.begin(
            Duration::from_secs(60),
            Instant::now() + Duration::from_secs(60),
            Some(cancel.clone()),
        );
        assert_eq!(guard.fired(), None);
        cancel.cancel();
        assert!(guard.should_interrupt());
        assert_eq!(guard.fired(), Some(Stop::Cancelled));
        guard.begin(Duration::from_secs(60), Instant::now(), None);
        assert!(guard.should_interrupt());
        assert_eq!(guard.fired(), Some(Stop::Wall));
    }
}
