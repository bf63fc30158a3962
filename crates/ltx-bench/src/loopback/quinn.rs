//! The QUIC peer: quinn, one unidirectional stream; its TLS and packet
//! protection from ring (`quinn`, the reference) or from aws-lc-rs, as
//! ltx's (`quinn-aws-lc`).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::rustls::crypto::CryptoProvider;
use quinn::rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};
use quinn::rustls::RootCertStore;
use quinn::udp::UdpSocketState;
use quinn::{
    ClientConfig, Endpoint, EndpointConfig, ServerConfig, TokioRuntime, TransportConfig, VarInt,
};
use tokio::sync::oneshot;

use super::payload::Verifier;
use super::{Mark, RunMeasurement, Sides, Transfer};

/// The name the server's certificate is issued to and the client asks for.
const SERVER_NAME: &str = "localhost";

/// quinn's default transport, with Cubic, except for its flow-control
/// windows: the defaults (1.25 MB per stream, 10 MB in flight) are sized for
/// 100 Mbit/s at 100 ms, and on loopback would make a descheduled side wait
/// for window updates. 32 MiB, tens of milliseconds at these rates, leaves
/// the transfer bound by congestion control and CPU.
fn transport() -> Arc<TransportConfig> {
    let mut transport = TransportConfig::default();
    transport
        .stream_receive_window(VarInt::from_u32(32 << 20))
        .receive_window(VarInt::MAX)
        .send_window(64 << 20);
    Arc::new(transport)
}

/// Socket buffer size asked for on each end; the kernel grants at most
/// `net.core.rmem_max` / `wmem_max`.
const SOCKET_BUFFER: usize = 8 << 20;

/// An endpoint on 127.0.0.1 whose UDP socket has large kernel buffers: the
/// default receive buffer (about 200 KiB) overflows at loopback speed
/// whenever the receiver is descheduled, a loss Cubic answers by halving its
/// window. The kernel's TCP grows its buffers by autotuning; this puts quinn
/// on the same footing, as deployments of QUIC do.
fn endpoint(server: Option<ServerConfig>) -> anyhow::Result<Endpoint> {
    let socket = std::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
    let state = UdpSocketState::new((&socket).into())?;
    state
        .set_recv_buffer_size((&socket).into(), SOCKET_BUFFER)
        .context("the socket's receive buffer")?;
    state
        .set_send_buffer_size((&socket).into(), SOCKET_BUFFER)
        .context("the socket's send buffer")?;
    Ok(Endpoint::new(
        EndpointConfig::default(),
        server,
        socket,
        Arc::new(TokioRuntime),
    )?)
}

/// A server configuration with a fresh self-signed certificate, and a
/// client configuration that trusts that certificate alone, both with
/// `provider`'s cryptography.
fn configs(provider: CryptoProvider) -> anyhow::Result<(ServerConfig, ClientConfig)> {
    let provider = Arc::new(provider);
    let issued = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_owned()])
        .context("making a self-signed certificate")?;
    let cert: CertificateDer<'static> = issued.cert.der().clone();
    let key = PrivatePkcs8KeyDer::from(issued.signing_key.serialize_der());

    let tls = quinn::rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&quinn::rustls::version::TLS13])
        .context("TLS 1.3 with the provider")?
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key.into())
        .context("the server's TLS configuration")?;
    let mut server = ServerConfig::with_crypto(Arc::new(
        QuicServerConfig::try_from(tls).context("the server's QUIC TLS configuration")?,
    ));
    server.transport_config(transport());

    let mut roots = RootCertStore::empty();
    roots.add(cert).context("trusting the certificate")?;
    let tls = quinn::rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&quinn::rustls::version::TLS13])
        .context("TLS 1.3 with the provider")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut client = ClientConfig::new(Arc::new(
        QuicClientConfig::try_from(tls).context("the client's QUIC TLS configuration")?,
    ));
    client.transport_config(transport());
    Ok((server, client))
}

/// One transfer over quinn with ring: see [`super::RunFn`].
pub(super) fn run(sides: &Sides, transfer: &Transfer) -> anyhow::Result<RunMeasurement> {
    run_with(
        sides,
        transfer,
        quinn::rustls::crypto::ring::default_provider(),
    )
}

/// One transfer over quinn with aws-lc-rs.
pub(super) fn run_aws_lc(sides: &Sides, transfer: &Transfer) -> anyhow::Result<RunMeasurement> {
    run_with(
        sides,
        transfer,
        quinn::rustls::crypto::aws_lc_rs::default_provider(),
    )
}

fn run_with(
    sides: &Sides,
    transfer: &Transfer,
    provider: CryptoProvider,
) -> anyhow::Result<RunMeasurement> {
    let (server, client) = configs(provider)?;
    let (address_tx, address_rx) = oneshot::channel();
    let (start, (end, delivery)) = sides.join(
        transfer.time_limit(),
        send(client, address_rx, transfer.clone()),
        receive(server, address_tx, transfer.clone()),
    )?;
    Ok(RunMeasurement {
        start,
        end,
        delivery,
    })
}

async fn send(
    config: ClientConfig,
    address: oneshot::Receiver<SocketAddr>,
    transfer: Transfer,
) -> anyhow::Result<Mark> {
    let endpoint = endpoint(None)?;
    let address = address.await.context("the receiver's address")?;
    let connection = endpoint
        .connect_with(config, address, SERVER_NAME)?
        .await
        .context("the handshake")?;
    let start = Mark::now()?;
    let mut stream = connection.open_uni().await?;
    for chunk in transfer.pattern.chunks(transfer.bytes) {
        stream.write_chunk(chunk).await?;
    }
    stream.finish()?;
    // Wait until the receiver has acknowledged everything: closing earlier
    // would abandon data still in flight.
    if let Some(code) = stream.stopped().await? {
        anyhow::bail!("the receiver stopped the stream with code {code}");
    }
    connection.close(VarInt::from_u32(0), b"done");
    endpoint.wait_idle().await;
    Ok(start)
}

async fn receive(
    config: ServerConfig,
    address: oneshot::Sender<SocketAddr>,
    transfer: Transfer,
) -> anyhow::Result<(Mark, super::Delivery)> {
    let endpoint = endpoint(Some(config))?;
    address
        .send(endpoint.local_addr()?)
        .map_err(|_| anyhow::anyhow!("the sender has gone"))?;
    let connection = endpoint
        .accept()
        .await
        .context("the endpoint closed")?
        .await
        .context("accepting the connection")?;
    let mut stream = connection.accept_uni().await?;
    let mut verifier = Verifier::new(&transfer.pattern);
    // Ordered chunks are handed over without a copy, quinn's fastest read.
    while let Some(chunk) = stream.read_chunk(usize::MAX, true).await? {
        verifier.feed(&chunk.bytes);
    }
    let end = Mark::now()?;
    // Stay until the sender closes, so that its wait for the last
    // acknowledgements ends cleanly rather than by timeout.
    connection.closed().await;
    Ok((end, verifier.finish()))
}
