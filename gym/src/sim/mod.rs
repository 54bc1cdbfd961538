//! The event-driven network: senders pacing packets into a shared bottleneck link.
//!
//! As in Aurora, every packet makes three events: its paced send, its arrival at the receiver
//! (which does nothing but can be the event that ends an MI) and the arrival of its ack (or of
//! the news that it was lost, when its ack would have arrived). Because the link is FIFO, each
//! sender's arrivals mostly come in send order; they are kept in per-sender deques sorted by
//! time (an out-of-order arrival, caused by latency noise or a delay drop, is inserted in place),
//! and the next event is the earliest head over all senders. Receiver arrivals, which change
//! nothing but the time, are looked at only where one could be the event that ends an MI or a
//! run (see [`Network::run_until`]).
//!
//! Ties follow Aurora's heap order `(time, sender, type, hop, latency, dropped)`: at equal times
//! the lower sender index goes first; within a sender, receiver arrivals, then ack arrivals, then
//! the send; equal-time acks by lower RTT first, then delivered before lost.

mod event;
mod in_flight;
mod network;
mod sender;

pub use network::{Network, SimCounters};
pub use sender::{Pacing, Sender, SenderTotals};
