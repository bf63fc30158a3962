//! A transfer whose last packet, the sender's close, is lost: the receiver
//! has every file whole and verified, so it must report success at once,
//! timed to its last byte, and not wait for the idle time-out. In the
//! simulator, in virtual time, with the file protocol over an ltx
//! connection; and through the impairment shim with the two binaries.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, BufRead, BufReader};
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use ltx_files::{
    Completion, FileOutcome, Inbox, Lane, Peer, ReceiveLane, ReceiveOptions, SendLane, SendOptions,
    Source, Sources, Stop, TransferName,
};
use ltx_proto::{
    CloseReason, Connection, EcnCodepoint, Event, ReadOutcome, StreamId, TransportConfig,
};
use ltx_sim::{Datagram, Ecn, LinkConfig, Network, Node, QueueLimit, Rate};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes one direction of a lane holds between the file protocol and the
/// connection's stream.
const PIPE_LIMIT: usize = 256 << 10;

/// One direction of a lane between the file protocol and a stream.
#[derive(Default)]
struct Pipe {
    bytes: VecDeque<u8>,
    ended: bool,
}

/// The file protocol's reading end of a pipe. It never registers a waker:
/// the node polls its future again after every input.
struct PipeReader(Rc<RefCell<Pipe>>);

impl AsyncRead for PipeReader {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut pipe = self.0.borrow_mut();
        if pipe.bytes.is_empty() {
            return if pipe.ended {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            };
        }
        let n = buf.remaining().min(pipe.bytes.len());
        let chunk: Vec<u8> = pipe.bytes.drain(..n).collect();
        buf.put_slice(&chunk);
        Poll::Ready(Ok(()))
    }
}

/// The file protocol's writing end of a pipe.
struct PipeWriter(Rc<RefCell<Pipe>>);

impl AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut pipe = self.0.borrow_mut();
        let room = PIPE_LIMIT.saturating_sub(pipe.bytes.len());
        if room == 0 {
            return Poll::Pending;
        }
        let n = room.min(buf.len());
        pipe.bytes.extend(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.borrow_mut().ended = true;
        Poll::Ready(Ok(()))
    }
}

/// Where the receiver's one file goes: memory.
#[derive(Clone, Default)]
struct Memory(Arc<Mutex<Vec<u8>>>);

impl AsyncWrite for Memory {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// What runs on top of the connection.
enum App {
    /// `send_lane` with one stream source; then the close.
    Sender {
        run: Pin<Box<dyn Future<Output = SendLane>>>,
        /// When the lane ended (every answer heard), and how.
        done: Option<(Instant, SendLane)>,
    },
    /// `receive_lane` into memory, then `sender_finished`, tallied as the
    /// receiving command tallies its lanes.
    Receiver {
        run: Pin<Box<dyn Future<Output = bool>>>,
        /// The lane's report, once it ended.
        lane: Rc<RefCell<Option<ReceiveLane>>>,
        completion: Completion,
        counted: bool,
        finished: bool,
        /// When the receiver let the transfer go.
        went_at: Option<Instant>,
    },
}

/// A simulated host: an ltx connection with one lane of the file protocol
/// on one stream.
struct FileNode {
    connection: Connection,
    stream: Option<StreamId>,
    /// What the file protocol wrote, for the stream.
    outgoing: Rc<RefCell<Pipe>>,
    /// What the stream carried, for the file protocol.
    incoming: Rc<RefCell<Pipe>>,
    finish_sent: bool,
    app: App,
    /// The sender asked for the close.
    closing: bool,
    /// The sender's datagrams dropped after its close went out.
    dropped: u64,
    closed: Option<(Instant, CloseReason)>,
}

/// How long a complete transfer waits for its sender to end its streams:
/// as the receiving command does, four round trips and a second.
fn grace(connection: &Connection) -> Duration {
    connection.stats().rtt * 4 + Duration::from_secs(1)
}

impl FileNode {
    fn new(connection: Connection, app: impl FnOnce(PipeReader, PipeWriter) -> App) -> FileNode {
        let outgoing = Rc::new(RefCell::new(Pipe::default()));
        let incoming = Rc::new(RefCell::new(Pipe::default()));
        let app = app(PipeReader(incoming.clone()), PipeWriter(outgoing.clone()));
        FileNode {
            connection,
            stream: None,
            outgoing,
            incoming,
            finish_sent: false,
            app,
            closing: false,
            dropped: 0,
            closed: None,
        }
    }

    /// Sends `payload` as a stream named `name`, on one lane.
    fn sender(connection: Connection, payload: Vec<u8>, name: &str) -> FileNode {
        let name = TransferName::parse(name).unwrap();
        FileNode::new(connection, move |mut reader, mut writer| {
            let run = async move {
                let sources = Sources::new([Source::Stream {
                    reader: Box::new(io::Cursor::new(payload)),
                    name,
                }]);
                let options = SendOptions::default();
                let stop = Stop::never();
                ltx_files::send_lane(
                    &mut reader,
                    &mut writer,
                    Lane::single(),
                    &sources,
                    &options,
                    &stop,
                    &|_| {},
                )
                .await
            };
            App::Sender {
                run: Box::pin(run),
                done: None,
            }
        })
    }

    /// Receives one lane into `memory`.
    fn receiver(connection: Connection, memory: Memory) -> FileNode {
        let lane = Rc::new(RefCell::new(None));
        let report = lane.clone();
        FileNode::new(connection, move |mut reader, mut writer| {
            let run = async move {
                let inbox = Inbox::writer(memory, ReceiveOptions::default());
                let ended = ltx_files::receive_lane(
                    &mut reader,
                    &mut writer,
                    &inbox,
                    &Peer::unknown(),
                    &|_| {},
                )
                .await;
                let said_goodbye = ended.end.is_ok();
                *report.borrow_mut() = Some(ended);
                said_goodbye && ltx_files::sender_finished(&mut reader).await.is_ok()
            };
            App::Receiver {
                run: Box::pin(run),
                lane,
                completion: Completion::default(),
                counted: false,
                finished: false,
                went_at: None,
            }
        })
    }

    /// Moves bytes between the stream and the pipes and runs the file
    /// protocol until neither moves.
    fn drive(&mut self, now: Instant) {
        while let Some(event) = self.connection.poll_event() {
            if let Event::Closed(reason) = event {
                self.closed = Some((now, reason));
            }
        }
        if self.stream.is_none() && self.connection.is_established() {
            self.stream = match self.app {
                App::Sender { .. } => self.connection.open_stream().ok(),
                App::Receiver { .. } => self.connection.accept_stream(),
            };
        }
        let Some(id) = self.stream else { return };
        let mut buf = vec![0; 64 << 10];
        loop {
            let mut moved = false;
            while self.incoming.borrow().bytes.len() < PIPE_LIMIT {
                match self.connection.read(id, &mut buf) {
                    Ok(ReadOutcome::Data(n)) => {
                        self.incoming.borrow_mut().bytes.extend(&buf[..n]);
                        moved = true;
                    }
                    Ok(ReadOutcome::Finished) => {
                        let mut incoming = self.incoming.borrow_mut();
                        moved |= !incoming.ended;
                        incoming.ended = true;
                        break;
                    }
                    Ok(ReadOutcome::Blocked) | Err(_) => break,
                }
            }
            moved |= self.poll_app(now);
            loop {
                let mut outgoing = self.outgoing.borrow_mut();
                if outgoing.bytes.is_empty() {
                    if outgoing.ended && !self.finish_sent {
                        self.finish_sent = self.connection.finish(id).is_ok();
                    }
                    break;
                }
                let (front, _) = outgoing.bytes.as_slices();
                match self.connection.write(id, front) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        outgoing.bytes.drain(..n);
                        moved = true;
                    }
                }
            }
            if !moved {
                break;
            }
        }
        if let App::Sender { done: Some(_), .. } = self.app {
            if !self.closing && self.finish_sent {
                self.closing = true;
                self.connection.close(now);
            }
        }
    }

    /// Polls the file protocol once; true if it finished a step.
    fn poll_app(&mut self, now: Instant) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        match &mut self.app {
            App::Sender { run, done } => {
                if done.is_some() {
                    return false;
                }
                match run.as_mut().poll(&mut cx) {
                    Poll::Ready(lane) => {
                        *done = Some((now, lane));
                        true
                    }
                    Poll::Pending => false,
                }
            }
            App::Receiver {
                run,
                lane,
                completion,
                counted,
                finished,
                went_at,
            } => {
                let mut stepped = false;
                if !*finished {
                    if let Poll::Ready(heard) = run.as_mut().poll(&mut cx) {
                        *finished = true;
                        stepped = true;
                        if heard {
                            completion.lane_heard(Lane::single());
                        }
                    }
                }
                if !*counted {
                    if let Some(report) = &*lane.borrow() {
                        completion.lane_ended(now, report);
                        *counted = true;
                        stepped = true;
                    }
                }
                if went_at.is_none() && completion.may_go(now, grace(&self.connection)) {
                    *went_at = Some(now);
                }
                stepped
            }
        }
    }
}

fn to_link(ecn: EcnCodepoint) -> Ecn {
    match ecn {
        EcnCodepoint::NotEct => Ecn::NotEct,
        EcnCodepoint::Ect0 => Ecn::Ect0,
        EcnCodepoint::Ect1 => Ecn::Ect1,
        EcnCodepoint::Ce => Ecn::Ce,
    }
}

fn from_link(ecn: Ecn) -> EcnCodepoint {
    match ecn {
        Ecn::NotEct => EcnCodepoint::NotEct,
        Ecn::Ect0 => EcnCodepoint::Ect0,
        Ecn::Ect1 => EcnCodepoint::Ect1,
        Ecn::Ce => EcnCodepoint::Ce,
    }
}

impl Node for FileNode {
    fn handle_datagram(&mut self, now: Instant, datagram: Datagram) {
        self.connection
            .handle_datagram(now, &datagram.payload, from_link(datagram.ecn));
        self.drive(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Datagram> {
        loop {
            let transmit = match self.connection.poll_transmit(now) {
                Some(transmit) => transmit,
                None => {
                    self.drive(now);
                    self.connection.poll_transmit(now)?
                }
            };
            // Once the sender's close has gone out, nothing it sends
            // arrives: the close is lost.
            if self.closing && !self.connection.is_established() {
                self.dropped += 1;
                continue;
            }
            return Some(Datagram {
                payload: transmit.contents,
                ecn: to_link(transmit.ecn),
            });
        }
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        let grace = grace(&self.connection);
        let waiting = match &self.app {
            App::Receiver {
                completion,
                went_at: None,
                ..
            } => completion.wait_until(grace),
            _ => None,
        };
        [self.connection.poll_timeout(), waiting]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.connection.handle_timeout(now);
        self.drive(now);
    }
}

const ONE_WAY: Duration = Duration::from_millis(300);
const IDLE: Duration = Duration::from_secs(30);

/// A 2 MB stream over a 600 ms, 20 Mbit/s path whose sender's close is
/// lost: the receiver lets the transfer go within a round trip or two of
/// its last byte, with the file whole; its connection, which never hears
/// the close, lasts until the idle time-out after that.
#[test]
fn in_the_simulator_a_lost_close_costs_the_receiver_nothing() {
    let epoch = Instant::now();
    let payload: Vec<u8> = (0..2_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut config = TransportConfig::default();
    config.set_idle_timeout(IDLE).unwrap();
    let client = Connection::client(config.clone(), epoch, 7).unwrap();
    let server = Connection::server(config, epoch, 8).unwrap();
    let memory = Memory::default();
    let sender = FileNode::sender(client, payload.clone(), "dir.tar");
    let receiver = FileNode::receiver(server, memory.clone());
    let link = LinkConfig {
        delay: ONE_WAY,
        rate: Some(Rate(20_000_000)),
        queue: QueueLimit::Packets(1000),
        ..LinkConfig::default()
    };
    let (mut net, s, r) =
        Network::single_path(epoch, 1, link.clone(), link, sender, receiver).unwrap();
    net.run(epoch + Duration::from_secs(120), |net| {
        net.node(r).closed.is_some() && net.node(s).closed.is_some()
    });

    let sender = net.node(s);
    let receiver = net.node(r);
    let Some((heard_all_at, lane)) = (match &sender.app {
        App::Sender { done, .. } => done.as_ref(),
        App::Receiver { .. } => None,
    }) else {
        panic!("the sender's lane did not end");
    };
    lane.end.as_ref().unwrap();
    assert!(
        matches!(lane.files[0].outcome, FileOutcome::Done(_)),
        "{:?}",
        lane.files
    );
    assert!(sender.dropped > 0, "the sender's close was never sent");
    let App::Receiver {
        completion,
        went_at,
        lane,
        ..
    } = &receiver.app
    else {
        panic!("not a receiver");
    };
    let lane = lane.borrow();
    let file = &lane.as_ref().expect("the receiver's lane ended").files[0];
    assert!(
        matches!(file.outcome, FileOutcome::Done(_)),
        "{:?}",
        file.outcome
    );
    assert!(*memory.0.lock().unwrap() == payload, "the file differs");

    // The receiver's goodbye left at its last byte and reached the sender
    // one way later (and the time it takes on the wire at 20 Mbit/s).
    let last_byte = completion.completed_at().expect("complete");
    let way = *heard_all_at - last_byte;
    assert!(
        way >= ONE_WAY && way < ONE_WAY + Duration::from_millis(1),
        "{way:?}"
    );
    // The receiver went once the sender ended its stream: a round trip
    // after its last byte, not a grace and not a time-out.
    let went_at = went_at.expect("the receiver let the transfer go");
    assert!(completion.sender_heard_all());
    assert!(
        went_at >= last_byte + 2 * ONE_WAY,
        "{:?}",
        went_at - last_byte
    );
    assert!(
        went_at < last_byte + 4 * ONE_WAY,
        "{:?}",
        went_at - last_byte
    );
    // Its connection never heard the close: only the time-out ended it.
    let (closed_at, reason) = receiver
        .closed
        .clone()
        .expect("the receiver's connection ended");
    assert_eq!(reason, CloseReason::IdleTimeout);
    assert!(
        closed_at >= went_at + IDLE - 4 * ONE_WAY,
        "{:?}",
        closed_at - went_at
    );
}

fn ltx() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ltx"))
}

/// Waits for a child, killing it if it outlives `bound`.
fn finish(mut child: std::process::Child, bound: Duration) -> std::process::Output {
    let deadline = Instant::now() + bound;
    while child.try_wait().expect("polling a child").is_none() {
        if Instant::now() > deadline {
            child.kill().expect("killing a hung child");
            panic!("a child outlived {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("the child's output")
}

/// The binaries through the impairment shim, 300 ms each way: once the
/// sender has printed its summary (it heard every answer), the path goes
/// down, so that neither the end of its streams nor its close ever
/// arrive. The receiver, whose idle time-out is ten minutes, still exits
/// 0 at once, with no error, its transfer complete and timed to its last
/// byte (within the sender's time), the file whole.
#[test]
fn through_the_shim_a_receiver_whose_peer_vanished_after_the_last_answer_succeeds() {
    use ltx::shim::ImpairedPath;

    let tmp = tempfile::tempdir().expect("a temporary directory");
    let file = tmp.path().join("data.bin");
    let data: Vec<u8> = (0..1_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    std::fs::write(&file, &data).expect("write");
    let out = tmp.path().join("out");
    let key_file = tmp.path().join("recv.key");
    let keygen = ltx()
        .args(["keygen", "--out"])
        .arg(&key_file)
        .output()
        .expect("ltx keygen");
    assert!(keygen.status.success(), "{keygen:?}");
    let key = String::from_utf8_lossy(&keygen.stdout).trim().to_owned();

    let mut receiver = ltx()
        .args([
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--once",
            "--json",
            "--timeout",
            "600s",
            "--dir",
        ])
        .arg(&out)
        .arg("--key")
        .arg(&key_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting ltx recv");
    let mut stderr = BufReader::new(receiver.stderr.take().expect("piped"));
    let mut line = String::new();
    stderr
        .read_line(&mut line)
        .expect("the receiver's first line");
    std::thread::spawn(move || io::copy(&mut stderr, &mut io::sink()));
    let server = line
        .split(" on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));

    let link = LinkConfig {
        delay: ONE_WAY,
        rate: Some(Rate(50_000_000)),
        queue: QueueLimit::Packets(4096),
        ..LinkConfig::default()
    };
    let path = ImpairedPath::start(server, link.clone(), link, 1).expect("the shim");
    let mut sender = ltx()
        .arg("send")
        .arg(&file)
        .arg(path.client_facing_addr().to_string())
        .args(["--peer", &key, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting ltx send");
    let mut summary = String::new();
    BufReader::new(sender.stdout.take().expect("piped"))
        .read_line(&mut summary)
        .expect("the sender's summary");
    // Everything after the last answer is lost.
    path.shutdown().expect("stopping the shim");

    let received = finish(receiver, Duration::from_secs(120));
    let sent = finish(sender, Duration::from_secs(60));
    assert!(received.status.success(), "{received:?}");
    assert!(sent.status.success(), "{sent:?}");
    let report: serde_json::Value =
        serde_json::from_slice(&received.stdout).expect("the receiver's JSON");
    let sender_report: serde_json::Value =
        serde_json::from_str(&summary).expect("the sender's JSON");
    assert_eq!(report["error"], serde_json::Value::Null, "{report}");
    assert_eq!(report["complete"], true, "{report}");
    assert_eq!(report["closed"], "by_receiver", "{report}");
    assert_eq!(
        report["files"][0]["error"],
        serde_json::Value::Null,
        "{report}"
    );
    let time_s = report["time_s"].as_f64().expect("time_s");
    let sender_s = sender_report["time_s"]
        .as_f64()
        .expect("the sender's time_s");
    assert!(
        time_s <= sender_s,
        "the receiver's {time_s} s against the sender's {sender_s} s"
    );
    assert!(
        std::fs::read(out.join("data.bin")).expect("the copy") == data,
        "the copy differs"
    );
}
