//! A constant-delay line in user space: packets read from a TUN device are held for `delay`
//! and written back to it, in arrival order.
//!
//! Two threads share the device. The reader blocks in `poll`, stamps each packet the moment
//! `read` returns it and hands it to the writer over a channel. The writer keeps a FIFO (the
//! delay is constant, so arrival order is due order), sleeps until `SPIN_WINDOW` before the
//! head is due (timer slack set to 1 ns) and spins the rest of the way, then writes every
//! packet that is due. Both threads ask for SCHED_FIFO (`REALTIME_PRIORITY`), so other
//! threads of a busy machine cannot delay their wake-ups by milliseconds; without it (no
//! CAP_SYS_NICE) they run as ordinary threads and `DelayLineStats::realtime` says so.
//!
//! The spin window is short because a SCHED_FIFO thread that spins all the time is throttled
//! by the kernel (`sched_rt_runtime_us`, 95% of each second by default): the writer spins at
//! most `SPIN_WINDOW` per packet, i.e. 20% of a core at 10k packets/s.
//!
//! Both threads look at a stop flag at least every `STOP_POLL`, so dropping the line stops
//! them within that time; held packets are discarded.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{NetError, Result};
use crate::timing::{set_timer_slack_to_minimum, try_realtime_priority};

/// The writer sleeps until this long before a packet is due, then spins.
pub const SPIN_WINDOW: Duration = Duration::from_micros(20);

/// SCHED_FIFO priority of both threads: above every ordinary thread, below the kernel's
/// interrupt threads (50).
pub const REALTIME_PRIORITY: i32 = 10;

/// Longest time either thread goes without looking at the stop flag.
pub const STOP_POLL: Duration = Duration::from_millis(20);

/// Packets held at once beyond which arrivals are dropped (a bound on memory: ~100 MB of
/// 1500-byte packets).
pub const MAX_HELD_PACKETS: usize = 65_536;

/// Largest packet read from the device (an IP packet can be at most this long).
const READ_BUFFER_BYTES: usize = 65_536;

/// A running delay line; dropping it stops both threads and closes the device.
#[derive(Debug)]
pub struct DelayLine {
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
    writer: Option<JoinHandle<()>>,
}

/// Counters of a delay line since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DelayLineStats {
    /// Packets read from the device.
    pub received: u64,
    /// Packets written back.
    pub forwarded: u64,
    /// Packets dropped because `MAX_HELD_PACKETS` were already held.
    pub dropped_overflow: u64,
    /// Writes the device refused (the packet is lost).
    pub write_errors: u64,
    /// Mean time between a packet's due time and its write.
    pub mean_lateness: Duration,
    /// Largest such time.
    pub max_lateness: Duration,
    /// Packets written more than 100 us late.
    pub late_over_100us: u64,
    /// Packets written more than 1 ms late.
    pub late_over_1ms: u64,
    /// Whether both threads run with SCHED_FIFO (false until both have started).
    pub realtime: bool,
}

#[derive(Debug)]
struct Shared {
    device: OwnedFd,
    stop: AtomicBool,
    delay_ns: AtomicU64,
    held: AtomicUsize,
    realtime_threads: AtomicUsize,
    counters: Counters,
    failure: Mutex<Option<String>>,
}

#[derive(Debug, Default)]
struct Counters {
    received: AtomicU64,
    forwarded: AtomicU64,
    dropped_overflow: AtomicU64,
    write_errors: AtomicU64,
    lateness_sum_ns: AtomicU64,
    lateness_max_ns: AtomicU64,
    late_over_100us: AtomicU64,
    late_over_1ms: AtomicU64,
}

/// A packet waiting in the line.
struct Held {
    due: Instant,
    packet: Vec<u8>,
}

impl DelayLine {
    /// Starts holding every packet read from `device` for `delay`.
    pub fn start(device: OwnedFd, delay: Duration) -> Result<Self> {
        let shared = Arc::new(Shared {
            device,
            stop: AtomicBool::new(false),
            delay_ns: AtomicU64::new(duration_ns(delay)),
            held: AtomicUsize::new(0),
            realtime_threads: AtomicUsize::new(0),
            counters: Counters::default(),
            failure: Mutex::new(None),
        });
        let (to_writer, from_reader) = mpsc::channel();
        let mut line = DelayLine {
            shared: Arc::clone(&shared),
            reader: None,
            writer: None,
        };
        let reader_shared = Arc::clone(&shared);
        line.reader = Some(spawn("delay-line-reader", move || {
            read_loop(&reader_shared, &to_writer)
        })?);
        line.writer = Some(spawn("delay-line-writer", move || {
            write_loop(&shared, &from_reader)
        })?);
        Ok(line)
    }

    /// Changes the delay of packets read from now on. Packets already held keep their due
    /// time, and order is kept: after a decrease, new packets wait behind older ones.
    pub fn set_delay(&self, delay: Duration) {
        self.shared
            .delay_ns
            .store(duration_ns(delay), Ordering::Relaxed);
    }

    /// The current delay.
    pub fn delay(&self) -> Duration {
        Duration::from_nanos(self.shared.delay_ns.load(Ordering::Relaxed))
    }

    /// The counters so far.
    pub fn stats(&self) -> DelayLineStats {
        DelayLineStats {
            realtime: self.shared.realtime_threads.load(Ordering::Relaxed) == 2,
            ..self.shared.counters.snapshot()
        }
    }

    /// Why the reader stopped early (the device failed), if it did.
    pub fn failure(&self) -> Option<String> {
        self.shared.failure.lock().ok().and_then(|f| f.clone())
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // A panicked thread has nothing left to stop; the device closes with `shared`.
        for handle in [self.reader.take(), self.writer.take()]
            .into_iter()
            .flatten()
        {
            let _ = handle.join();
        }
    }
}

fn spawn(name: &str, body: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(body)
        .map_err(|e| NetError::io(format!("spawning thread {name}"), e))
}

/// Reads packets as they arrive, stamps their due time and hands them to the writer.
fn read_loop(shared: &Shared, to_writer: &Sender<Held>) {
    shared.ask_for_realtime();
    let mut buffer = vec![0u8; READ_BUFFER_BYTES];
    while !shared.stop.load(Ordering::Relaxed) {
        match wait_readable(&shared.device, STOP_POLL) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(e) => return shared.fail(format!("poll on the TUN device: {e}")),
        }
        if let Err(e) = drain_device(shared, &mut buffer, to_writer) {
            return shared.fail(format!("read from the TUN device: {e}"));
        }
    }
}

/// Reads every packet now available on the non-blocking device.
fn drain_device(
    shared: &Shared,
    buffer: &mut [u8],
    to_writer: &Sender<Held>,
) -> std::io::Result<()> {
    loop {
        let len = match read_packet(&shared.device, buffer) {
            Ok(len) => len,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let arrival = Instant::now();
        let counters = &shared.counters;
        counters.received.fetch_add(1, Ordering::Relaxed);
        if shared.held.load(Ordering::Relaxed) >= MAX_HELD_PACKETS {
            counters.dropped_overflow.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let delay = Duration::from_nanos(shared.delay_ns.load(Ordering::Relaxed));
        let held = Held {
            due: arrival + delay,
            packet: buffer[..len].to_vec(),
        };
        shared.held.fetch_add(1, Ordering::Relaxed);
        if to_writer.send(held).is_err() {
            return Ok(()); // the writer is gone: the line is stopping
        }
    }
}

/// Writes each packet back when it is due.
fn write_loop(shared: &Shared, from_reader: &Receiver<Held>) {
    set_timer_slack_to_minimum();
    shared.ask_for_realtime();
    let mut line: VecDeque<Held> = VecDeque::new();
    while !shared.stop.load(Ordering::Relaxed) {
        line.extend(from_reader.try_iter());
        let Some(head) = line.front() else {
            match from_reader.recv_timeout(STOP_POLL) {
                Ok(held) => line.push_back(held),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            continue;
        };
        if !wait_until(head.due, &shared.stop) {
            return;
        }
        write_due(shared, &mut line);
    }
}

/// Writes and removes every packet at the head of `line` that is due now.
fn write_due(shared: &Shared, line: &mut VecDeque<Held>) {
    while let Some(head) = line.front() {
        let now = Instant::now();
        if head.due > now {
            return;
        }
        let lateness = now - head.due;
        match write_packet(&shared.device, &head.packet) {
            Ok(()) => shared.counters.record_forward(lateness),
            Err(_) => {
                shared.counters.write_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        line.pop_front();
        shared.held.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Sleeps until `SPIN_WINDOW` before `due`, then spins until `due`. Returns false when `stop`
/// was raised meanwhile.
fn wait_until(due: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        let remaining = due - now;
        if remaining > SPIN_WINDOW {
            std::thread::sleep((remaining - SPIN_WINDOW).min(STOP_POLL));
        } else {
            std::hint::spin_loop();
        }
    }
}

impl Shared {
    fn ask_for_realtime(&self) {
        if try_realtime_priority(REALTIME_PRIORITY) {
            self.realtime_threads.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn fail(&self, message: String) {
        if let Ok(mut failure) = self.failure.lock() {
            failure.get_or_insert(message);
        }
    }
}

impl Counters {
    fn record_forward(&self, lateness: Duration) {
        let ns = duration_ns(lateness);
        self.forwarded.fetch_add(1, Ordering::Relaxed);
        self.lateness_sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.lateness_max_ns.fetch_max(ns, Ordering::Relaxed);
        if lateness > Duration::from_micros(100) {
            self.late_over_100us.fetch_add(1, Ordering::Relaxed);
        }
        if lateness > Duration::from_millis(1) {
            self.late_over_1ms.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> DelayLineStats {
        let forwarded = self.forwarded.load(Ordering::Relaxed);
        let sum = self.lateness_sum_ns.load(Ordering::Relaxed);
        DelayLineStats {
            received: self.received.load(Ordering::Relaxed),
            forwarded,
            dropped_overflow: self.dropped_overflow.load(Ordering::Relaxed),
            write_errors: self.write_errors.load(Ordering::Relaxed),
            mean_lateness: Duration::from_nanos(sum.checked_div(forwarded).unwrap_or(0)),
            max_lateness: Duration::from_nanos(self.lateness_max_ns.load(Ordering::Relaxed)),
            late_over_100us: self.late_over_100us.load(Ordering::Relaxed),
            late_over_1ms: self.late_over_1ms.load(Ordering::Relaxed),
            realtime: false,
        }
    }
}

/// Waits up to `timeout` for `fd` to become readable.
fn wait_readable(fd: &OwnedFd, timeout: Duration) -> std::io::Result<bool> {
    let mut pollfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let timeout_ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd, counted as one.
    let rc = unsafe { libc::poll(&mut pollfd, 1, timeout_ms) };
    match rc {
        0 => Ok(false),
        n if n > 0 => Ok(pollfd.revents & libc::POLLIN != 0),
        _ => {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
}

fn read_packet(fd: &OwnedFd, buffer: &mut [u8]) -> std::io::Result<usize> {
    // SAFETY: the buffer is valid for `buffer.len()` bytes of writes.
    let n = unsafe { libc::read(fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn write_packet(fd: &OwnedFd, packet: &[u8]) -> std::io::Result<()> {
    // SAFETY: the packet is valid for `packet.len()` bytes of reads.
    let n = unsafe { libc::write(fd.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn duration_ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_until_returns_at_or_after_the_deadline() {
        let stop = AtomicBool::new(false);
        let due = Instant::now() + Duration::from_millis(3);
        assert!(wait_until(due, &stop));
        let returned = Instant::now();
        assert!(returned >= due, "returned {:?} early", due - returned);
        // Not a timing measurement (a loaded 2-core machine can preempt the thread for tens of
        // milliseconds; pacing lateness is measured by `mocc net run`, docs/real-network.md):
        // only that it did not sleep in the wrong unit or miss the deadline's poll.
        let late = returned - due;
        assert!(
            late < STOP_POLL + Duration::from_millis(500),
            "late by {late:?}"
        );
    }

    #[test]
    fn wait_until_gives_up_when_stopped() {
        let stop = AtomicBool::new(true);
        assert!(!wait_until(Instant::now() + Duration::from_secs(60), &stop));
    }

    #[test]
    fn stats_average_the_lateness() {
        let counters = Counters::default();
        counters.record_forward(Duration::from_micros(50));
        counters.record_forward(Duration::from_micros(250));
        counters.record_forward(Duration::from_millis(2));
        let stats = counters.snapshot();
        assert_eq!(stats.forwarded, 3);
        assert_eq!(stats.mean_lateness, Duration::from_micros(2300) / 3);
        assert_eq!(stats.max_lateness, Duration::from_millis(2));
        assert_eq!(stats.late_over_100us, 2);
        assert_eq!(stats.late_over_1ms, 1);
    }

    /// A Unix datagram socket pair stands in for the TUN device: as on it, each read returns
    /// one packet and each write sends one, so what the line writes back comes out of the
    /// test's end.
    #[test]
    fn holds_each_datagram_for_the_delay() {
        let (line_end, test_end) = std::os::unix::net::UnixDatagram::pair().unwrap();
        line_end.set_nonblocking(true).unwrap();
        let fd = OwnedFd::from(line_end);
        let delay = Duration::from_millis(20);
        let line = DelayLine::start(fd, delay).unwrap();
        test_end
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let mut buffer = [0u8; 16];
        for i in 0..5u8 {
            let sent = Instant::now();
            test_end.send(&[i; 10]).unwrap();
            let n = test_end.recv(&mut buffer).unwrap();
            let held = sent.elapsed();
            assert_eq!(&buffer[..n], &[i; 10]);
            assert!(held >= delay, "packet {i} held only {held:?}");
            assert!(
                held < delay + Duration::from_millis(5),
                "packet {i} held {held:?}"
            );
        }
        let stats = line.stats();
        assert_eq!((stats.received, stats.forwarded), (5, 5));
        assert!(line.failure().is_none());
    }
}
