//! One connection of an application across the emulated real path: the sender serves from
//! the sender's namespace, the receiver connects from the receiver's, over QUIC (s2n-quic with
//! the learned controller or its Cubic / BBR) or kernel TCP (`TCP_CONGESTION`), and both ends
//! get a byte stream (tokio's `AsyncRead + AsyncWrite`): an application is written once for
//! both transports. The path follows its timeline meanwhile.

use crate::run::{net_error, RunError};
use mocc_net::timing::thread_cpu_s;
use mocc_net::{run_schedule, Host, NetError, PathChange, Topology};
use mocc_quic::transfer::{self, BidirectionalStream, Certificate, QuicCc};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The port the sender serves on.
const PORT: u16 = 4433;
/// How long the receiver waits for the sender to listen, and the sender for the receiver.
const CONNECT_WAIT: Duration = Duration::from_secs(10);
/// How long the sender waits, after its last byte, for the receiver to close.
const CLOSE_WAIT: Duration = Duration::from_secs(10);
/// The byte a receiver opens its stream with (a QUIC stream appears once it carries data).
const HELLO: u8 = b'm';

/// The transport of an application and its congestion control.
#[derive(Debug, Clone)]
pub enum AppTransport {
    /// s2n-quic with this controller.
    Quic(QuicCc),
    /// Kernel TCP with this congestion control (a name in
    /// /proc/sys/net/ipv4/tcp_available_congestion_control).
    Tcp(String),
}

/// A byte stream between the two ends.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin {
    /// Ends this end's direction without waiting for the peer (a QUIC stream's FIN, a TCP
    /// socket's shutdown for writing).
    fn finish_sending(&mut self) -> impl Future<Output = io::Result<()>>;
}

impl Stream for BidirectionalStream {
    async fn finish_sending(&mut self) -> io::Result<()> {
        self.finish().map_err(other)
    }
}

impl Stream for tokio::net::TcpStream {
    async fn finish_sending(&mut self) -> io::Result<()> {
        self.shutdown().await
    }
}

impl Stream for tokio::io::DuplexStream {
    async fn finish_sending(&mut self) -> io::Result<()> {
        self.shutdown().await
    }
}

/// The two halves of an application: what the sender does with its stream, and what the
/// receiver does with its own and measures.
pub(crate) trait Application: Clone + Send + 'static {
    /// What a receiver measured.
    type Outcome: Send + 'static;
    /// The sender's part; `epoch` is an instant both ends share.
    fn serve<S: Stream>(
        &self,
        stream: &mut S,
        epoch: Instant,
    ) -> impl Future<Output = io::Result<()>>;
    /// The receiver's part; `connecting` is when it began to connect.
    fn receive<S: Stream>(
        &self,
        stream: &mut S,
        epoch: Instant,
        connecting: Instant,
    ) -> impl Future<Output = io::Result<Self::Outcome>>;
    /// The longest a run may take before it counts as failed.
    fn time_limit(&self) -> Duration;
}

/// What a receiver measured, and the CPU time the sender's thread spent (s): the stack, its
/// congestion controller and the application's sending side.
pub(crate) type Session<T> = (T, f64);

/// Runs `app` once across `topology` over `transport` while the path makes `changes` (times
/// from the start of the connection attempt).
pub(crate) fn run_session<A: Application>(
    topology: &Topology,
    transport: &AppTransport,
    app: &A,
    changes: &[PathChange],
) -> Result<Session<A::Outcome>, RunError> {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|scope| {
        let schedule = scope.spawn(|| run_schedule(topology, changes, start, &stop));
        let outcome = connect_and_run(topology, transport, app, start);
        stop.store(true, Ordering::Relaxed);
        schedule
            .join()
            .map_err(|_| RunError::Panicked("the path schedule".into()))?
            .map_err(net_error("cannot change the path during the run"))?;
        outcome
    })
}

fn connect_and_run<A: Application>(
    topology: &Topology,
    transport: &AppTransport,
    app: &A,
    epoch: Instant,
) -> Result<Session<A::Outcome>, RunError> {
    let addr = SocketAddr::new(topology.sender_addr().into(), PORT);
    match transport {
        AppTransport::Quic(cc) => quic_session(topology, addr, cc.clone(), app, epoch),
        AppTransport::Tcp(cc) => tcp_session(topology, addr, cc, app, epoch),
    }
}

fn quic_session<A: Application>(
    topology: &Topology,
    addr: SocketAddr,
    cc: QuicCc,
    app: &A,
    epoch: Instant,
) -> Result<Session<A::Outcome>, RunError> {
    let cert = Certificate::self_signed().map_err(invalid)?;
    let (server_cert, server_app, limit) = (cert.clone(), app.clone(), app.time_limit());
    let (ready, listening) = mpsc::channel();
    let sender = topology
        .spawn_in(Host::Sender, "quic-sender", move || {
            let cpu = thread_cpu_s();
            on_runtime(limit, async move {
                let server = transfer::listen(addr, cc, &server_cert).map_err(other)?;
                let _ = ready.send(());
                let (_server, mut connection, mut stream) =
                    tokio::time::timeout(CONNECT_WAIT, transfer::accept_stream(server))
                        .await
                        .map_err(|_| timed_out("no receiver connected"))?
                        .map_err(other)?;
                serve_stream(&server_app, &mut stream, epoch).await?;
                // The receiver closes once it has everything: until then, what is in flight
                // (the last data, the FIN) still has a sender to retransmit it.
                transfer::until_closed(&mut connection, CLOSE_WAIT).await;
                Ok(())
            })
            .map(|()| thread_cpu_s() - cpu)
        })
        .map_err(net_error("starting the QUIC sender"))?;
    if listening.recv_timeout(CONNECT_WAIT).is_err() {
        return Err(sender_error(sender, "the QUIC sender did not listen"));
    }
    let receiver_app = app.clone();
    let received = topology
        .in_namespace(Host::Receiver, move || {
            on_runtime(limit, async move {
                let connecting = Instant::now();
                let (mut client, connection, mut stream) =
                    transfer::connect_stream(addr, &cert).await.map_err(other)?;
                let outcome = receive_stream(&receiver_app, &mut stream, epoch, connecting).await;
                // The sender waits for this close: let the endpoint send it before it goes.
                connection.close(0u32.into());
                drop((connection, stream));
                let _ = tokio::time::timeout(CLOSE_WAIT, client.wait_idle()).await;
                outcome
            })
        })
        .map_err(net_error("the QUIC receiver"))?;
    let served = sender
        .join()
        .map_err(|_| RunError::Panicked("the QUIC sender".into()))?
        .map_err(net_error("the QUIC sender"))?;
    finish(served, received, "QUIC")
}

fn tcp_session<A: Application>(
    topology: &Topology,
    addr: SocketAddr,
    cc: &str,
    app: &A,
    epoch: Instant,
) -> Result<Session<A::Outcome>, RunError> {
    let listener = topology
        .in_namespace(Host::Sender, move || std::net::TcpListener::bind(addr))
        .map_err(net_error("the TCP sender's namespace"))?
        .map_err(|e| net_error("listening for the TCP receiver")(NetError::io("bind", e)))?;
    let (cc_name, server_app, limit) = (cc.to_string(), app.clone(), app.time_limit());
    let sender = std::thread::Builder::new()
        .name("tcp-sender".into())
        .spawn(move || {
            let cpu = thread_cpu_s();
            on_runtime(limit, async move {
                listener.set_nonblocking(true)?;
                let listener = tokio::net::TcpListener::from_std(listener)?;
                let (mut stream, _) = tokio::time::timeout(CONNECT_WAIT, listener.accept())
                    .await
                    .map_err(|_| timed_out("no receiver connected"))??;
                mocc_net::transport::set_congestion(&stream, &cc_name).map_err(other)?;
                stream.set_nodelay(true)?;
                serve_stream(&server_app, &mut stream, epoch).await
            })
            .map(|()| thread_cpu_s() - cpu)
        })
        .map_err(|e| net_error("starting the TCP sender")(NetError::io("thread", e)))?;
    let receiver_app = app.clone();
    let received = topology
        .in_namespace(Host::Receiver, move || {
            on_runtime(limit, async move {
                let connecting = Instant::now();
                let mut stream =
                    tokio::time::timeout(CONNECT_WAIT, tokio::net::TcpStream::connect(addr))
                        .await
                        .map_err(|_| timed_out("the sender did not answer"))??;
                stream.set_nodelay(true)?;
                receive_stream(&receiver_app, &mut stream, epoch, connecting).await
            })
        })
        .map_err(net_error("the TCP receiver's namespace"))?;
    let served = sender
        .join()
        .map_err(|_| RunError::Panicked("the TCP sender".into()))?;
    finish(served, received, "TCP")
}

/// The sender's side of any application: waits for the receiver's first byte, serves, ends
/// its direction, and reads until the receiver has ended its own.
async fn serve_stream<A: Application, S: Stream>(
    app: &A,
    stream: &mut S,
    epoch: Instant,
) -> io::Result<()> {
    let mut hello = [0u8; 1];
    stream.read_exact(&mut hello).await?;
    if hello[0] != HELLO {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a mocc receiver",
        ));
    }
    app.serve(stream, epoch).await?;
    stream.finish_sending().await?;
    let _ = tokio::time::timeout(CLOSE_WAIT, drain(stream)).await;
    Ok(())
}

/// The receiver's side of any application: opens the stream, receives, ends its direction,
/// and reads until the sender has ended its own (then the connection may close).
async fn receive_stream<A: Application, S: Stream>(
    app: &A,
    stream: &mut S,
    epoch: Instant,
    connecting: Instant,
) -> io::Result<A::Outcome> {
    stream.write_all(&[HELLO]).await?;
    stream.flush().await?;
    let outcome = app.receive(stream, epoch, connecting).await?;
    stream.finish_sending().await?;
    let _ = tokio::time::timeout(CLOSE_WAIT, drain(stream)).await;
    Ok(outcome)
}

/// Reads and drops everything until the end of the stream.
async fn drain<S: Stream>(stream: &mut S) -> io::Result<()> {
    let mut buf = vec![0u8; 16 * 1024];
    while stream.read(&mut buf).await? > 0 {}
    Ok(())
}

/// The receiver's outcome and the sender's CPU time, or the first error, naming its end.
fn finish<T>(
    served: Result<f64, String>,
    received: Result<T, String>,
    transport: &str,
) -> Result<Session<T>, RunError> {
    let outcome = received.map_err(|e| invalid(format!("the {transport} receiver: {e}")))?;
    let cpu_s = served.map_err(|e| invalid(format!("the {transport} sender: {e}")))?;
    Ok((outcome, cpu_s))
}

/// The sender's error, or `fallback` when it gave none.
fn sender_error(
    handle: std::thread::JoinHandle<mocc_net::Result<Result<f64, String>>>,
    fallback: &str,
) -> RunError {
    match handle.join() {
        Ok(Ok(Err(e))) => invalid(e),
        Ok(Err(e)) => RunError::Net {
            what: fallback.to_string(),
            source: e,
        },
        _ => invalid(fallback),
    }
}

/// Runs `f` on a runtime of the calling thread (so its sockets open in that thread's
/// namespace), at most for `limit`.
fn on_runtime<T>(limit: Duration, f: impl Future<Output = io::Result<T>>) -> Result<T, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("async runtime: {e}"))?
        .block_on(async { tokio::time::timeout(limit, f).await })
        .map_err(|_| format!("did not finish in {} s", limit.as_secs()))?
        .map_err(|e| e.to_string())
}

fn invalid(e: impl std::fmt::Display) -> RunError {
    RunError::Invalid(e.to_string())
}

fn other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, what.to_string())
}
