//! A sender - router - receiver path in three network namespaces:
//!
//! ```text
//!  snd ns            rtr ns                                          rcv ns
//!  veth0 --------- to-snd [forward, nft loss] to-rcv (tbf + pfifo) --------- veth0
//!    ^                                           |
//!    +-- main table <-- delay0 (TUN) <-- table 100 (iif to-rcv) <-------------+
//! ```
//!
//! Data (sender -> receiver) crosses the bottleneck in the kernel; the return path is held
//! by the user-space delay line for the round-trip propagation delay. Dropping the topology
//! stops the delay line (which removes the TUN device) and then deletes the namespaces, with
//! their veths, qdiscs, routes and nftables table.

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;

use crate::addressing::Addresses;
use crate::bottleneck;
use crate::cleanup::{cleanup_stale, namespace_name};
use crate::delay_line::{DelayLine, DelayLineStats};
use crate::error::Result;
use crate::link::{round_trip_delay, validate_bandwidth, validate_delay, validate_loss, PathSpec};
use crate::loss;
use crate::namespace::{self, namespace_exists, OwnedNamespace};
use crate::preflight::preflight;
use crate::return_path;
use crate::sysctl::{disable_ipv6, write_sysctls};
use crate::wiring::{wire_line, LineNamespaces};

/// Topologies created by this process so far (part of every namespace name).
static TOPOLOGY_COUNTER: AtomicU32 = AtomicU32::new(0);

/// Router settings: forward packets, and no reverse-path filter (packets from the receiver
/// come back in on the TUN device, not on the receiver's link).
const ROUTER_SYSCTLS: [(&str, &str); 3] = [
    ("net/ipv4/ip_forward", "1"),
    ("net/ipv4/conf/all/rp_filter", "0"),
    ("net/ipv4/conf/default/rp_filter", "0"),
];

/// One of the three namespaces of a topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// Where the data sender runs.
    Sender,
    /// The router holding the bottleneck, the loss rule and the delay line.
    Router,
    /// Where the receiver runs.
    Receiver,
}

impl Host {
    /// The role's suffix in namespace names.
    pub fn role(self) -> &'static str {
        match self {
            Host::Sender => "snd",
            Host::Router => "rtr",
            Host::Receiver => "rcv",
        }
    }
}

/// A live emulated path; dropping it removes everything it created.
#[derive(Debug)]
pub struct Topology {
    /// The path as configured now, and whether it is down (see [`Topology::set_down`]).
    state: Mutex<PathState>,
    addresses: Addresses,
    // Fields drop in declaration order: the delay line (threads, TUN device) goes first,
    // then the namespaces.
    delay_line: DelayLine,
    sender: OwnedNamespace,
    router: OwnedNamespace,
    receiver: OwnedNamespace,
}

/// What a running path is set to.
#[derive(Debug, Clone, Copy)]
struct PathState {
    spec: PathSpec,
    down: bool,
}

impl Topology {
    /// Checks the preconditions, removes namespaces left by dead processes and builds the
    /// path. On error everything built so far is removed again.
    pub fn create(spec: &PathSpec) -> Result<Self> {
        spec.validate()?;
        preflight()?;
        cleanup_stale()?;
        let pid = std::process::id();
        let counter = reserve_counter(pid);
        let sender = OwnedNamespace::create(&namespace_name(pid, counter, Host::Sender.role()))?;
        let router = OwnedNamespace::create(&namespace_name(pid, counter, Host::Router.role()))?;
        let receiver =
            OwnedNamespace::create(&namespace_name(pid, counter, Host::Receiver.role()))?;
        for namespace in [&sender, &router, &receiver] {
            disable_ipv6(namespace.name())?;
        }
        write_sysctls(router.name(), &ROUTER_SYSCTLS)?;
        let addresses = Addresses::for_topology(pid, counter);
        let line = LineNamespaces {
            sender: sender.name(),
            router: router.name(),
            receiver: receiver.name(),
        };
        wire_line(line, &addresses)?;
        bottleneck::install(router.name(), spec.bandwidth_pps, spec.queue_pkts)?;
        loss::install(router.name(), spec.loss)?;
        let delay_line = return_path::install(router.name(), spec.round_trip_delay())?;
        Ok(Topology {
            state: Mutex::new(PathState {
                spec: *spec,
                down: false,
            }),
            addresses,
            delay_line,
            sender,
            router,
            receiver,
        })
    }

    /// The path as currently configured.
    pub fn spec(&self) -> PathSpec {
        self.state().spec
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PathState> {
        // The state is two plain values, consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The interface addresses.
    pub fn addresses(&self) -> &Addresses {
        &self.addresses
    }

    /// The sender's address.
    pub fn sender_addr(&self) -> Ipv4Addr {
        self.addresses.sender
    }

    /// The receiver's address.
    pub fn receiver_addr(&self) -> Ipv4Addr {
        self.addresses.receiver
    }

    /// The address of `host` as the other end host sees it (the router: its sender side).
    pub fn addr(&self, host: Host) -> Ipv4Addr {
        match host {
            Host::Sender => self.addresses.sender,
            Host::Router => self.addresses.router_sender_side,
            Host::Receiver => self.addresses.receiver,
        }
    }

    /// The namespace name of `host`.
    pub fn namespace(&self, host: Host) -> &str {
        match host {
            Host::Sender => self.sender.name(),
            Host::Router => self.router.name(),
            Host::Receiver => self.receiver.name(),
        }
    }

    /// The three namespace names, sender, router, receiver.
    pub fn namespaces(&self) -> [&str; 3] {
        [self.sender.name(), self.router.name(), self.receiver.name()]
    }

    /// Runs `program args...` in `host`'s namespace and returns its stdout.
    pub fn exec<S: AsRef<str>>(&self, host: Host, program: &str, args: &[S]) -> Result<String> {
        namespace::exec_in(self.namespace(host), program, args)
    }

    /// A `Command` running `program` in `host`'s namespace, to add arguments and spawn.
    pub fn command(&self, host: Host, program: &str) -> Command {
        namespace::command_in(self.namespace(host), program)
    }

    /// Runs `f` on a thread inside `host`'s namespace (e.g. to open sockets there).
    pub fn in_namespace<T: Send, F: FnOnce() -> T + Send>(&self, host: Host, f: F) -> Result<T> {
        namespace::in_namespace(self.namespace(host), f)
    }

    /// Spawns a thread living in `host`'s namespace that runs `f`.
    pub fn spawn_in<T, F>(
        &self,
        host: Host,
        thread_name: &str,
        f: F,
    ) -> Result<JoinHandle<Result<T>>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        namespace::spawn_in_namespace(self.namespace(host), thread_name, f)
    }

    /// Changes the bottleneck rate; packets already queued stay queued. Safe while flows run
    /// (every setter takes the path's lock).
    pub fn set_bandwidth(&self, bandwidth_pps: f64) -> Result<()> {
        validate_bandwidth(bandwidth_pps)?;
        let mut state = self.state();
        bottleneck::change_rate(self.router.name(), bandwidth_pps, state.spec.queue_pkts)?;
        state.spec.bandwidth_pps = bandwidth_pps;
        Ok(())
    }

    /// Changes the queue capacity; queued packets stay.
    pub fn set_queue(&self, queue_pkts: u32) -> Result<()> {
        let mut state = self.state();
        let candidate = PathSpec {
            queue_pkts,
            ..state.spec
        };
        candidate.validate()?;
        bottleneck::set_queue(self.router.name(), queue_pkts)?;
        state.spec.queue_pkts = queue_pkts;
        Ok(())
    }

    /// Changes the one-way delay for packets entering the delay line from now on.
    pub fn set_delay(&self, delay_s: f64) -> Result<()> {
        validate_delay(delay_s)?;
        let mut state = self.state();
        self.delay_line.set_delay(round_trip_delay(delay_s));
        state.spec.delay_s = delay_s;
        Ok(())
    }

    /// Changes the random loss probability of the data direction (while the path is down it
    /// takes effect when it comes back up).
    pub fn set_loss(&self, loss_probability: f64) -> Result<()> {
        validate_loss(loss_probability)?;
        let mut state = self.state();
        if !state.down {
            loss::change(self.router.name(), loss_probability)?;
        }
        state.spec.loss = loss_probability;
        Ok(())
    }

    /// Takes the path down (every packet entering the bottleneck towards the receiver is
    /// dropped; packets already queued are still delivered, as in the simulator's outages)
    /// or brings it back up with its loss probability.
    pub fn set_down(&self, down: bool) -> Result<()> {
        let mut state = self.state();
        if down {
            loss::drop_all(self.router.name())?;
        } else {
            loss::change(self.router.name(), state.spec.loss)?;
        }
        state.down = down;
        Ok(())
    }

    /// The delay line's counters and lateness.
    pub fn delay_line_stats(&self) -> DelayLineStats {
        self.delay_line.stats()
    }

    /// Why the delay line stopped early, if it did (the return path is dead then).
    pub fn delay_line_failure(&self) -> Option<String> {
        self.delay_line.failure()
    }

    /// Removes everything now, reporting the first namespace that could not be deleted
    /// (dropping does the same silently).
    pub fn close(self) -> Result<()> {
        let Topology {
            delay_line,
            sender,
            router,
            receiver,
            ..
        } = self;
        drop(delay_line);
        let results = [sender.delete(), router.delete(), receiver.delete()];
        results.into_iter().collect::<Result<Vec<()>>>().map(|_| ())
    }
}

/// The next topology number whose three namespace names are all free (a leftover of a dead
/// process with the same pid could hold one).
fn reserve_counter(pid: u32) -> u32 {
    loop {
        let counter = TOPOLOGY_COUNTER.fetch_add(1, Ordering::Relaxed);
        let taken = [Host::Sender, Host::Router, Host::Receiver]
            .iter()
            .any(|host| namespace_exists(&namespace_name(pid, counter, host.role())));
        if !taken {
            return counter;
        }
    }
}
