//! The events of the simulation: which kind comes next ([`EventKind`]) and when, for which
//! sender ([`Event`]).

/// Which kind of event comes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EventKind {
    Receiver,
    Ack,
    Send,
}

/// An event: its time, sender and kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Event {
    pub(super) t: f64,
    pub(super) sender: usize,
    pub(super) kind: EventKind,
}
