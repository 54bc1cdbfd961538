//! One transfer over s2n-quic, for applications and measurements: a server that sends a body
//! on the first stream of its first connection, with the learned controller or the stack's
//! own Cubic or BBR, and a client that receives it all and says how long it took.

use crate::s2n::LearnedEndpoint;
use s2n_quic::provider::congestion_controller::{self, Bbr, Cubic};
pub use s2n_quic::stream::BidirectionalStream;
pub use s2n_quic::Connection;
use s2n_quic::{client::Connect, Client, Server};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The name the server's certificate is for (clients ask for it).
pub const SERVER_NAME: &str = "mocc-sender";

/// How long a server waits for the client to confirm it has everything.
const CONFIRM_WAIT: Duration = Duration::from_secs(10);

/// A QUIC transfer that failed.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// A certificate could not be made.
    #[error("certificate: {0}")]
    Certificate(String),
    /// The stack refused a setting or the connection failed.
    #[error("quic {what}: {message}")]
    Quic {
        /// What was being done.
        what: &'static str,
        /// The stack's message.
        message: String,
    },
}

fn quic(what: &'static str) -> impl FnOnce(String) -> TransferError {
    move |message| TransferError::Quic { what, message }
}

/// The server's congestion controller.
#[derive(Debug, Clone)]
pub enum QuicCc {
    /// An export (see [`LearnedEndpoint`]).
    Learned(LearnedEndpoint),
    /// s2n-quic's Cubic.
    Cubic,
    /// s2n-quic's BBRv2.
    Bbr,
}

/// A self-signed certificate for [`SERVER_NAME`], which the client trusts.
#[derive(Debug, Clone)]
pub struct Certificate {
    cert_pem: String,
    key_pem: String,
}

impl Certificate {
    /// A fresh one.
    pub fn self_signed() -> Result<Self, TransferError> {
        let c = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()])
            .map_err(|e| TransferError::Certificate(e.to_string()))?;
        Ok(Self {
            cert_pem: c.cert.pem(),
            key_pem: c.signing_key.serialize_pem(),
        })
    }
}

/// A server listening at `addr` (port 0: any); call [`serve_once`] with it.
pub fn listen(addr: SocketAddr, cc: QuicCc, cert: &Certificate) -> Result<Server, TransferError> {
    match cc {
        QuicCc::Learned(e) => server_with(addr, e, cert),
        QuicCc::Cubic => server_with(addr, Cubic::default(), cert),
        QuicCc::Bbr => server_with(addr, Bbr::default(), cert),
    }
}

fn server_with<E: congestion_controller::Provider>(
    addr: SocketAddr,
    cc: E,
    cert: &Certificate,
) -> Result<Server, TransferError> {
    Server::builder()
        .with_tls((cert.cert_pem.as_str(), cert.key_pem.as_str()))
        .map_err(|e| quic("tls")(e.to_string()))?
        .with_io(addr)
        .map_err(|e| quic("socket")(e.to_string()))?
        .with_congestion_controller(cc)
        .map_err(|e| quic("congestion controller")(e.to_string()))?
        .start()
        .map_err(|e| quic("server")(e.to_string()))
}

/// Waits (at most `limit`) until the peer closes `connection`.
pub async fn until_closed(connection: &mut Connection, limit: Duration) {
    let _ = tokio::time::timeout(limit, async {
        while let Ok(Some(_)) = connection.accept_bidirectional_stream().await {}
    })
    .await;
}

/// The first connection and the first stream its client opens (the stream appears once the
/// client has sent on it); keep the connection while the stream is in use.
pub async fn accept_stream(
    mut server: Server,
) -> Result<(Server, s2n_quic::Connection, BidirectionalStream), TransferError> {
    let Some(mut connection) = server.accept().await else {
        return Err(quic("accept")("the server closed".into()));
    };
    let stream = connection
        .accept_bidirectional_stream()
        .await
        .map_err(|e| quic("stream")(e.to_string()))?
        .ok_or_else(|| quic("stream")("the client opened none".into()))?;
    Ok((server, connection, stream))
}

/// A client connected to `addr` with a stream it opened; keep the client and the connection
/// while the stream is in use.
pub async fn connect_stream(
    addr: SocketAddr,
    cert: &Certificate,
) -> Result<(Client, s2n_quic::Connection, BidirectionalStream), TransferError> {
    let client = client(cert)?;
    let mut connection = client
        .connect(Connect::new(addr).with_server_name(SERVER_NAME))
        .await
        .map_err(|e| quic("connect")(e.to_string()))?;
    let stream = connection
        .open_bidirectional_stream()
        .await
        .map_err(|e| quic("stream")(e.to_string()))?;
    Ok((client, connection, stream))
}

/// How long the client may hold an acknowledgement (the `max_ack_delay` it announces).
/// s2n-quic's default receiver acknowledges every 10th packet or 25 ms after the first one it
/// holds: below 400 packets/s the newest packet of an ACK frame then waits up to an
/// inter-packet gap, and its RTT sample carries that wait. A learned controller reads such
/// samples as a queue (it trained on per-packet feedback) and lowers its rate, which widens
/// the gaps further; a 1 ms hold keeps the samples within a millisecond of the path's RTT.
pub const CLIENT_MAX_ACK_DELAY: Duration = Duration::from_millis(1);

fn client(cert: &Certificate) -> Result<Client, TransferError> {
    let limits = s2n_quic::provider::limits::Limits::new()
        .with_max_ack_delay(CLIENT_MAX_ACK_DELAY)
        .map_err(|e| quic("limits")(e.to_string()))?;
    Client::builder()
        .with_tls(cert.cert_pem.as_str())
        .map_err(|e| quic("tls")(e.to_string()))?
        .with_limits(limits)
        .map_err(|e| quic("limits")(e.to_string()))?
        .with_io("0.0.0.0:0")
        .map_err(|e| quic("socket")(e.to_string()))?
        .start()
        .map_err(|e| quic("client")(e.to_string()))
}

/// Sends `body` on the first stream of the first connection, then waits (at most 10 s) until
/// the client says it has everything.
pub async fn serve_once(mut server: Server, body: bytes::Bytes) -> Result<(), TransferError> {
    let Some(mut connection) = server.accept().await else {
        return Err(quic("accept")("the server closed".into()));
    };
    let mut stream = connection
        .open_bidirectional_stream()
        .await
        .map_err(|e| quic("stream")(e.to_string()))?;
    stream
        .send(body)
        .await
        .map_err(|e| quic("send")(e.to_string()))?;
    stream.finish().map_err(|e| quic("finish")(e.to_string()))?;
    let _ = tokio::time::timeout(CONFIRM_WAIT, stream.receive()).await;
    Ok(())
}

/// What a client received.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fetched {
    /// Bytes received.
    pub bytes: usize,
    /// From the connection attempt to the last byte (s), handshake included.
    pub seconds: f64,
}

/// Connects to `addr`, receives the first stream to its end, and confirms.
pub async fn fetch(addr: SocketAddr, cert: &Certificate) -> Result<Fetched, TransferError> {
    let client = client(cert)?;
    let start = Instant::now();
    let mut connection = client
        .connect(Connect::new(addr).with_server_name(SERVER_NAME))
        .await
        .map_err(|e| quic("connect")(e.to_string()))?;
    let mut stream = connection
        .accept_bidirectional_stream()
        .await
        .map_err(|e| quic("stream")(e.to_string()))?
        .ok_or_else(|| quic("stream")("the server opened none".into()))?;
    let mut bytes = 0;
    while let Some(data) = stream
        .receive()
        .await
        .map_err(|e| quic("receive")(e.to_string()))?
    {
        bytes += data.len();
    }
    let seconds = start.elapsed().as_secs_f64();
    // Tells the server it has everything, and gives the FIN time to leave.
    let _ = stream.finish();
    tokio::time::sleep(Duration::from_millis(200)).await;
    connection.close(0u32.into());
    Ok(Fetched { bytes, seconds })
}
