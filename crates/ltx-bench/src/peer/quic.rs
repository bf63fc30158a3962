//! QUIC: quinn, one unidirectional stream, its Cubic or BBR controller.
//!
//! The two ends are separate processes, so the client cannot be handed the
//! server's freshly made certificate as the loopback benchmark's is: it
//! takes any certificate (checking the handshake's signatures still), which
//! costs the same on the wire and in CPU as checking a chain would, near
//! enough, and is for benchmarks only.

use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use quinn::congestion::{BbrConfig, ControllerFactory, CubicConfig};
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use quinn::rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use quinn::rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use quinn::rustls::{DigitallySignedStruct, SignatureScheme};
use quinn::{
    ClientConfig, Endpoint, EndpointConfig, ServerConfig, TokioRuntime, TransportConfig, VarInt,
};

use super::super::payload::{Pattern, Verifier};
use super::report::{cpu_seconds, monotonic_ns, run_queue_seconds, ClientReport, ServerReport};
use super::{sockets, PayloadArgs, Received, RustSystem};

/// The name the server's certificate is issued to and the client asks for.
pub(crate) const SERVER_NAME: &str = "ltx-bench-peer";

/// Flow-control windows far above any path's bandwidth-delay product in
/// the scenario matrix (3.75 MB at most), so that only congestion control
/// limits the sender: quinn's defaults (1.25 MB per stream) are sized for
/// 100 Mbit/s at 100 ms and would cap the long-delay scenarios.
const WINDOW: u32 = 64 << 20;

/// quinn's default transport with the system's controller and wide windows.
fn transport(system: RustSystem) -> anyhow::Result<Arc<TransportConfig>> {
    let controller: Arc<dyn ControllerFactory + Send + Sync> = match system {
        RustSystem::QuicCubic => Arc::new(CubicConfig::default()),
        RustSystem::QuicBbr => Arc::new(BbrConfig::default()),
        other => anyhow::bail!("{} is not a QUIC system", other.name()),
    };
    let mut transport = TransportConfig::default();
    transport
        .congestion_controller_factory(controller)
        .stream_receive_window(VarInt::from_u32(WINDOW))
        .receive_window(VarInt::MAX)
        .send_window(u64::from(WINDOW))
        // The slowest transfers of the matrix (high loss, 600 ms) can
        // leave the path quiet for seconds; quinn's default would end them.
        .max_idle_timeout(Some(VarInt::from_u32(120_000).into()))
        .keep_alive_interval(Some(Duration::from_secs(5)));
    Ok(Arc::new(transport))
}

/// An endpoint on `address` whose UDP socket has the buffers asked for.
fn endpoint(
    address: SocketAddr,
    server: Option<ServerConfig>,
    args: &PayloadArgs,
) -> anyhow::Result<Endpoint> {
    let socket =
        std::net::UdpSocket::bind(address).with_context(|| format!("binding {address}"))?;
    if let Some(bytes) = args.socket_buffer {
        sockets::set_buffers(socket.as_fd(), bytes).context("setting socket buffers")?;
    }
    Ok(Endpoint::new(
        EndpointConfig::default(),
        server,
        socket,
        Arc::new(TokioRuntime),
    )?)
}

/// Takes one connection on `listen` and checks the stream it opens.
pub(super) async fn receive(
    listen: SocketAddr,
    args: &PayloadArgs,
    pattern: &Pattern,
) -> anyhow::Result<Received> {
    let mut config = self_signed_server_config()?;
    config.transport_config(transport(args.system)?);
    let endpoint = endpoint(listen, Some(config), args)?;
    let connection = endpoint
        .accept()
        .await
        .context("the endpoint closed")?
        .await
        .context("accepting the connection")?;
    let mut stream = connection.accept_uni().await?;
    let mut verifier = Verifier::new(pattern);
    let mut first_ns = None;
    while let Some(chunk) = stream.read_chunk(usize::MAX, true).await? {
        first_ns.get_or_insert(monotonic_ns()?);
        verifier.feed(&chunk.bytes);
    }
    let end_ns = monotonic_ns()?;
    let report = ServerReport::new(
        args.system.name(),
        args.size,
        verifier.finish(),
        first_ns.unwrap_or(end_ns),
        end_ns,
    )?;
    // Stay until the sender closes, so that its wait for the last
    // acknowledgements ends cleanly rather than by timeout.
    Ok(Received {
        report,
        linger: Box::pin(async move {
            connection.closed().await;
            drop(endpoint);
        }),
    })
}

/// Sends the payload to `connect` and waits until all of it is
/// acknowledged.
pub(super) async fn send(
    connect: SocketAddr,
    args: &PayloadArgs,
    pattern: &Pattern,
) -> anyhow::Result<ClientReport> {
    let mut config = any_certificate_client_config()?;
    config.transport_config(transport(args.system)?);
    let local = if connect.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    let endpoint = endpoint(local, None, args)?;
    let start_ns = monotonic_ns()?;
    let connection = endpoint
        .connect_with(config, connect, SERVER_NAME)?
        .await
        .context("the handshake")?;
    let mut stream = connection.open_uni().await?;
    for chunk in pattern.chunks(args.size) {
        stream.write_chunk(chunk).await?;
    }
    stream.finish()?;
    // Wait until the receiver has acknowledged everything: closing earlier
    // would abandon data still in flight.
    if let Some(code) = stream.stopped().await? {
        anyhow::bail!("the receiver stopped the stream with code {code}");
    }
    let wire_bytes = connection.stats().udp_tx.bytes;
    connection.close(VarInt::from_u32(0), b"done");
    endpoint.wait_idle().await;
    Ok(ClientReport {
        system: args.system.name().to_owned(),
        bytes: args.size,
        start_ns,
        cpu_s: cpu_seconds()?,
        run_queue_s: run_queue_seconds(),
        wire_bytes: Some(wire_bytes),
    })
}

/// A server configuration with a certificate made for the run, issued to
/// [`SERVER_NAME`].
pub(crate) fn self_signed_server_config() -> anyhow::Result<ServerConfig> {
    let issued = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_owned()])
        .context("making a self-signed certificate")?;
    let cert: CertificateDer<'static> = issued.cert.der().clone();
    let key = PrivatePkcs8KeyDer::from(issued.signing_key.serialize_der());
    // ring, named: the build has aws-lc-rs too, for the loopback benchmark.
    let tls =
        quinn::rustls::ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_protocol_versions(&[&quinn::rustls::version::TLS13])
            .context("the server's TLS versions")?
            .with_no_client_auth()
            .with_single_cert(vec![cert], key.into())
            .context("the server's TLS configuration")?;
    Ok(ServerConfig::with_crypto(Arc::new(
        QuicServerConfig::try_from(tls).context("the server's QUIC TLS configuration")?,
    )))
}

/// A client configuration that takes any server certificate (see the
/// module's documentation); connect with the name [`SERVER_NAME`].
pub(crate) fn any_certificate_client_config() -> anyhow::Result<ClientConfig> {
    let provider = Arc::new(ring::default_provider());
    let tls = quinn::rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&quinn::rustls::version::TLS13])
        .context("the client's TLS versions")?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    Ok(ClientConfig::new(Arc::new(
        QuicClientConfig::try_from(tls).context("the client's QUIC TLS configuration")?,
    )))
}

/// Takes the server's certificate whatever it is, and checks the
/// handshake's signatures with it as usual.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, quinn::rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, quinn::rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, quinn::rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
