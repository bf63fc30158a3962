//! `ltx keygen`, and the key options of `ltx send` and `ltx recv`: key
//! files, peers' public keys and allow lists.
//!
//! Keys are written as 64 lowercase hex digits. A private key file holds
//! the private key on its first line and is created with mode 0600.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, Context};
use clap::Args;
use ltx::{AllowList, PresharedKey, PublicKey, SecurityConfig, StaticKeypair};
use ltx_cli::exit::{Failed, Failure};

/// The arguments of `ltx keygen`.
#[derive(Debug, Args)]
pub(crate) struct KeygenArgs {
    /// Where to write the new private key (never over an existing file).
    #[arg(long, default_value = "ltx.key", conflicts_with = "show")]
    out: PathBuf,
    /// Print the public key of an existing private key file instead.
    #[arg(long, value_name = "KEY_FILE")]
    show: Option<PathBuf>,
}

/// Runs `ltx keygen`: the public key goes to stdout alone, so that a
/// script can take it.
pub(crate) fn run_keygen(args: &KeygenArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.show {
        println!("{}", read_keypair(path)?.public());
        return Ok(());
    }
    let keypair = ltx::generate_keypair();
    write_private_key(&args.out, &keypair)?;
    eprintln!(
        "wrote the private key to {} (mode 0600: keep it secret); its public key:",
        args.out.display()
    );
    println!("{}", keypair.public());
    Ok(())
}

fn write_private_key(path: &Path, keypair: &StaticKeypair) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).with_context(|| {
        if path.exists() {
            format!(
                "{} exists; not overwriting a key (remove it first, or choose another --out)",
                path.display()
            )
        } else {
            format!("creating {}", path.display())
        }
    })?;
    writeln!(file, "{}", keypair.private_hex())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

/// Reads a private key file written by `ltx keygen`: a file that cannot be
/// read is a local file error (exit 6), one that holds no key a usage error.
pub(crate) fn read_keypair(path: &Path) -> anyhow::Result<StaticKeypair> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the key file {}", path.display()))
        .context(Failed(Failure::LocalFile))?;
    let line = text.lines().next().unwrap_or_default();
    line.parse()
        .with_context(|| format!("{} is not a private key from ltx keygen", path.display()))
        .context(Failed(Failure::Usage))
}

/// The key options of `ltx send`: this sender's key and the receiver's.
#[derive(Debug, Args)]
pub(crate) struct SendKeys {
    /// This sender's private key file, from `ltx keygen` (a fresh key for
    /// this run if left out; a receiver that lists its senders with
    /// `--allow` or `--peer` needs a stored one).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// The receiver's public key (64 hex digits), which `ltx recv` prints
    /// when it starts.
    #[arg(long, value_name = "PUBLIC_KEY")]
    peer: Option<PublicKey>,
    /// A file holding a pre-shared key (64 hex digits) that the receiver
    /// must have too, mixed into the handshake.
    #[arg(long, value_name = "FILE")]
    psk: Option<PathBuf>,
}

/// The key options of `ltx recv`: this receiver's key and the senders it
/// accepts.
#[derive(Debug, Args)]
pub(crate) struct RecvKeys {
    /// This receiver's private key file, from `ltx keygen` (required).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// A sender's public key that this receiver accepts (repeatable; with
    /// neither --peer nor --allow, any sender that knows this receiver's
    /// public key).
    #[arg(long, value_name = "PUBLIC_KEY")]
    peer: Vec<PublicKey>,
    /// A file of the senders' public keys this receiver accepts, one per
    /// line (`#` starts a comment).
    #[arg(long, value_name = "FILE")]
    allow: Option<PathBuf>,
    /// A file holding a pre-shared key (64 hex digits) that every sender
    /// must have too, mixed into the handshake.
    #[arg(long, value_name = "FILE")]
    psk: Option<PathBuf>,
}

const RECV_NEEDS_A_KEY: &str = "ltx recv needs a key pair, so that senders can tell it \
from an impostor. Make one, once:
    ltx keygen --out recv.key
then start the receiver with it:
    ltx recv --key recv.key
and give each sender the public key that keygen printed (the receiver prints it too \
when it starts, and `ltx keygen --show recv.key` prints it again):
    ltx send FILE HOST:PORT --peer PUBLIC_KEY";

const SEND_NEEDS_THE_PEER: &str = "ltx send needs the receiver's public key, to be sure \
it talks to the right receiver. The receiver prints it when it starts (\"public key ...\"), \
and `ltx keygen --show recv.key` prints it from the receiver's key file. Then:
    ltx send FILE HOST:PORT --peer PUBLIC_KEY
If the receiver accepts only some senders (--allow), give this sender a key of its own \
and add its public key to the receiver's allow file:
    ltx keygen --out send.key
    ltx send FILE HOST:PORT --peer PUBLIC_KEY --key send.key";

/// What to tell a sender whose receiver did not answer.
pub(crate) const NO_ANSWER_HINT: &str = "either UDP to it is blocked, or the receiver refused \
this sender: check --peer (the receiver's public key), --psk, and that the receiver allows \
this sender's key (`ltx keygen --show` on the --key file prints it)";

/// The pre-shared key in `path`, if one is given.
fn read_psk(path: Option<&Path>) -> anyhow::Result<Option<PresharedKey>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the pre-shared key file {}", path.display()))
        .context(Failed(Failure::LocalFile))?;
    let key = text
        .lines()
        .next()
        .unwrap_or_default()
        .parse()
        .with_context(|| format!("{} does not hold 64 hex digits", path.display()))
        .context(Failed(Failure::Usage))?;
    Ok(Some(key))
}

impl RecvKeys {
    /// The receiver's security: its key (required) and whom it accepts.
    pub(crate) fn receiver(&self) -> anyhow::Result<SecurityConfig> {
        let Some(path) = &self.key else {
            return Err(anyhow!(RECV_NEEDS_A_KEY).context(Failed(Failure::Usage)));
        };
        let mut security = SecurityConfig::new(read_keypair(path)?);
        security.psk = read_psk(self.psk.as_deref())?;
        if self.allow.is_some() || !self.peer.is_empty() {
            let mut allowed = match &self.allow {
                Some(path) => std::fs::read_to_string(path)
                    .with_context(|| format!("reading the allow file {}", path.display()))
                    .context(Failed(Failure::LocalFile))?
                    .parse::<AllowList>()
                    .with_context(|| format!("in the allow file {}", path.display()))
                    .context(Failed(Failure::Usage))?,
                None => AllowList::default(),
            };
            for key in &self.peer {
                allowed.insert(*key);
            }
            security.allowed_clients = Some(Arc::new(allowed));
        }
        Ok(security)
    }
}

impl SendKeys {
    /// The sender's security (its key, fresh if none is given) and the
    /// receiver's public key (required).
    pub(crate) fn sender(&self) -> anyhow::Result<(SecurityConfig, PublicKey)> {
        let Some(peer) = self.peer else {
            return Err(anyhow!(SEND_NEEDS_THE_PEER).context(Failed(Failure::Usage)));
        };
        let keypair = match &self.key {
            Some(path) => read_keypair(path)?,
            None => ltx::generate_keypair(),
        };
        let mut security = SecurityConfig::new(keypair);
        security.psk = read_psk(self.psk.as_deref())?;
        Ok((security, peer))
    }
}
