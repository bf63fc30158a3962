//! Where a receiver puts files, what it allows, who sends, and which
//! transfer holds which name.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::sync::watch;

use crate::name::TransferName;
use crate::wire::RefuseReason;

/// What a receiver allows.
#[derive(Debug, Clone)]
pub struct ReceiveOptions {
    /// Replace an existing file of the same name (atomically, once the new
    /// one is complete and verified).
    pub force: bool,
    /// Treat the disk as if at most this many bytes of any one file fit on
    /// it: an offer needing more is refused as for a full disk, and a
    /// stream that grows past it fails.
    pub max_file_bytes: Option<u64>,
    /// Give each stored file the mode and modification time its sender
    /// sent (permission bits only: never setuid, setgid or sticky).
    pub keep_metadata: bool,
    /// How long the sender of a transfer that holds a file must have been
    /// silent before a new transfer from the same sender (same
    /// [`Peer::new`] id) takes the file over. A new transfer waits twice
    /// that long at most: the old connection may still be heard for a while
    /// after its sender died (datagrams queued at the receiver, a silence
    /// read a few hundred milliseconds late), and a rerun should not be
    /// refused for that.
    pub quiet_before_takeover: Duration,
    /// How long a silent sender's transfers last before they are given up
    /// (the connection's idle time-out), to tell a refused rerun how long
    /// to wait; `None` if unknown.
    pub gives_up_after: Option<Duration>,
    /// Fail writes that would take the partial file past this many bytes,
    /// as a disk that fills up during the transfer would.
    #[cfg(test)]
    pub(crate) disk_full_after: Option<u64>,
}

impl Default for ReceiveOptions {
    fn default() -> Self {
        Self::new(false, None)
    }
}

impl ReceiveOptions {
    /// Options for a receiver: whether to replace existing files, and the
    /// largest file it takes; metadata is kept, and a silent transfer is
    /// taken over by its own sender after 2 s.
    pub fn new(force: bool, max_file_bytes: Option<u64>) -> Self {
        Self {
            force,
            max_file_bytes,
            keep_metadata: true,
            quiet_before_takeover: Duration::from_secs(2),
            gives_up_after: None,
            #[cfg(test)]
            disk_full_after: None,
        }
    }
}

/// Where received files go.
pub(crate) enum Destination {
    /// Under this directory, by name.
    Directory(PathBuf),
    /// The bytes of one file, to this writer; taken by the first offer.
    Writer(tokio::sync::Mutex<Option<Box<dyn AsyncWrite + Send + Unpin>>>),
}

/// A receiver's destination, options and the names its transfers hold:
/// one for all the lanes of all the connections of a receiver, so that two
/// transfers never write the same file.
pub struct Inbox {
    pub(crate) destination: Destination,
    pub(crate) options: ReceiveOptions,
    pub(crate) claims: Claims,
}

impl fmt::Debug for Inbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let destination = match &self.destination {
            Destination::Directory(dir) => dir.display().to_string(),
            Destination::Writer(_) => "a writer".to_owned(),
        };
        f.debug_struct("Inbox")
            .field("destination", &destination)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Inbox {
    /// Files go under `dir`, each under its transfer name.
    pub fn directory(dir: impl Into<PathBuf>, options: ReceiveOptions) -> Self {
        Self {
            destination: Destination::Directory(dir.into()),
            options,
            claims: Claims::default(),
        }
    }

    /// The bytes of one file go to `writer` as they arrive (nothing is
    /// stored, nothing resumes); the file is reported good only once all
    /// of it hashed right. Any other file is refused.
    pub fn writer(
        writer: impl AsyncWrite + Send + Unpin + 'static,
        options: ReceiveOptions,
    ) -> Self {
        Self {
            destination: Destination::Writer(tokio::sync::Mutex::new(Some(Box::new(writer)))),
            options,
            claims: Claims::default(),
        }
    }

    /// The directory files go under, if they go to one.
    pub fn dir(&self) -> Option<&Path> {
        match &self.destination {
            Destination::Directory(dir) => Some(dir),
            Destination::Writer(_) => None,
        }
    }

    /// What the receiver allows.
    pub fn options(&self) -> &ReceiveOptions {
        &self.options
    }
}

/// The sender of a lane, as the receiver knows it: who it is, to let its
/// rerun take over a file its silent earlier transfer holds, and how long
/// it has been silent.
#[derive(Clone)]
pub struct Peer {
    id: Vec<u8>,
    silence: Arc<dyn Fn() -> Duration + Send + Sync>,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("id", &self.id)
            .field("silence", &(self.silence)())
            .finish()
    }
}

impl Peer {
    /// A sender known by `id` (its public key, say: anything two
    /// connections of the same sender share and others cannot claim),
    /// silent for as long as `silence` says.
    pub fn new(
        id: impl Into<Vec<u8>>,
        silence: impl Fn() -> Duration + Send + Sync + 'static,
    ) -> Self {
        Self {
            id: id.into(),
            silence: Arc::new(silence),
        }
    }

    /// A sender of unknown identity: it never takes anything over, and its
    /// transfers never count as silent.
    pub fn unknown() -> Self {
        Self::new(Vec::new(), || Duration::ZERO)
    }
}

/// A refusal decided before any data was accepted.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) reason: RefuseReason,
    pub(crate) message: String,
}

/// Which transfer holds which name, by the path of its partial file.
#[derive(Default)]
pub(crate) struct Claims {
    held: Mutex<HashMap<PathBuf, Holder>>,
    next_token: AtomicU64,
}

/// The transfer that holds a name.
struct Holder {
    token: u64,
    owner: Vec<u8>,
    silence: Arc<dyn Fn() -> Duration + Send + Sync>,
    take_over: watch::Sender<bool>,
}

/// A name held by one transfer; released when dropped.
pub(crate) struct Claim<'a> {
    claims: &'a Claims,
    path: PathBuf,
    token: u64,
    taken: watch::Receiver<bool>,
}

impl Claim<'_> {
    /// Resolves when a newer transfer from the same sender takes the name
    /// over: the holder must stop at once and drop its claim.
    pub(crate) async fn taken_over(&mut self) {
        if self.taken.wait_for(|taken| *taken).await.is_err() {
            // The sender half lives in the table as long as this claim.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut held = self.claims.lock();
        if held.get(&self.path).is_some_and(|h| h.token == self.token) {
            held.remove(&self.path);
        }
    }
}

/// How often a transfer waiting for a name looks again.
const POLL: Duration = Duration::from_millis(20);

/// How long a holder told to give a name up may take to do it.
const RELEASE_WAIT: Duration = Duration::from_secs(5);

impl Claims {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Holder>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds the name whose partial file is `path` for a transfer from
    /// `peer`. A name held by a silent transfer of the same sender is taken
    /// over (the sender runs again after its first run died); anything
    /// else held is refused, saying how long to wait.
    pub(crate) async fn claim(
        &self,
        path: &Path,
        name: &TransferName,
        peer: &Peer,
        options: &ReceiveOptions,
    ) -> Result<Claim<'_>, Refusal> {
        let waited_since = tokio::time::Instant::now();
        let mut told_at = None;
        loop {
            {
                let mut held = self.lock();
                match held.get(path) {
                    None => {
                        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
                        let (take_over, taken) = watch::channel(false);
                        held.insert(
                            path.to_path_buf(),
                            Holder {
                                token,
                                owner: peer.id.clone(),
                                silence: peer.silence.clone(),
                                take_over,
                            },
                        );
                        return Ok(Claim {
                            claims: self,
                            path: path.to_path_buf(),
                            token,
                            taken,
                        });
                    }
                    Some(holder) => {
                        let silent = (holder.silence)();
                        let same = !peer.id.is_empty() && holder.owner == peer.id;
                        let waited = waited_since.elapsed();
                        if !same {
                            return Err(busy_elsewhere(name, silent, options));
                        }
                        if told_at.is_none() && silent >= options.quiet_before_takeover {
                            holder.take_over.send_replace(true);
                            told_at = Some(tokio::time::Instant::now());
                        }
                        let gave_up = match told_at {
                            Some(at) => at.elapsed() > RELEASE_WAIT,
                            None => waited > options.quiet_before_takeover * 2,
                        };
                        if gave_up {
                            return Err(Refusal {
                                reason: RefuseReason::Busy,
                                message: format!(
                                    "{name} is being received from this sender on another \
                                     connection, which is still active: wait for it to end, \
                                     or stop it"
                                ),
                            });
                        }
                    }
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// The refusal for a name another sender's transfer holds.
fn busy_elsewhere(name: &TransferName, silent: Duration, options: &ReceiveOptions) -> Refusal {
    let whole = |d: Duration| d.as_secs_f64().ceil() as u64;
    let message = match options.gives_up_after {
        Some(limit) if silent >= Duration::from_secs(1) => format!(
            "another sender's transfer of {name} is in progress on the receiver, silent for \
             {} s; the receiver gives it up after {} s of silence: run again in {} s (a rerun \
             with that transfer's sender key takes it over at once)",
            silent.as_secs(),
            whole(limit),
            whole(limit.saturating_sub(silent)).max(1),
        ),
        Some(limit) => format!(
            "another sender's transfer of {name} is in progress on the receiver: run again \
             once it has ended (or in {} s, if its sender has gone)",
            whole(limit),
        ),
        None => format!(
            "another sender's transfer of {name} is in progress on the receiver: run again \
             once it has ended or timed out"
        ),
    };
    Refusal {
        reason: RefuseReason::Busy,
        message,
    }
}
