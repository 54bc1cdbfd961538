//! A QUIC file server whose congestion controller is a shipped mocc export: copy this into
//! your own server. `cargo run -p mocc-quic --example learned_server -- EXPORT CERT KEY FILE`
//! serves FILE on the first stream of every connection to 0.0.0.0:4433.

use mocc_quic::LearnedEndpoint;
use s2n_quic::Server;
use std::error::Error;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [export, cert, key, file] = args.as_slice() else {
        return Err("usage: learned_server EXPORT CERT.pem KEY.pem FILE".into());
    };
    // Bulk transfer: weigh throughput most. Start at 200 packets/s (2.4 Mbit/s).
    let controller = LearnedEndpoint::load(export, [0.8, 0.1, 0.1], 200.0)?;
    let mut server = Server::builder()
        .with_tls((std::path::Path::new(cert), std::path::Path::new(key)))?
        .with_io("0.0.0.0:4433")?
        .with_congestion_controller(controller)?
        .start()?;
    let body = bytes::Bytes::from(std::fs::read(file)?);
    while let Some(mut connection) = server.accept().await {
        let body = body.clone();
        tokio::spawn(async move {
            if let Ok(mut stream) = connection.open_bidirectional_stream().await {
                let _ = stream.send(body).await;
                let _ = stream.finish();
                let _ = connection.accept_bidirectional_stream().await; // until the client closes
            }
        });
    }
    Ok(())
}
