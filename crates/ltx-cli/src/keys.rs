//! `ltx keygen`, and the key options of `ltx send` and `ltx recv`: key
//! files, peers' public keys and allow lists.
//!
//! Keys are written as 64 lowercase hex digits. A private key file holds
//! the private key on its first line and is created with mode 0600.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use ltx::{AllowList, PresharedKey, PublicKey, SecurityConfig, StaticKeypair};

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

/// Reads a private key file written by `ltx keygen`.
pub(crate) fn read_keypair(path: &Path) -> anyhow::Result<StaticKeypair> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the key file {}", path.display()))?;
    let line = text.lines().next().unwrap_or_default();
    line.parse()
        .with_context(|| format!("{} is not a private key from ltx keygen", path.display()))
}

/// The key options of `ltx send` and `ltx recv`.
#[derive(Debug, Args)]
pub(crate) struct KeyArgs {
    /// This end's private key file, from `ltx keygen`.
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// The peer's public key (64 hex digits): for `send`, the receiver's
    /// (required); for `recv`, a sender it accepts (repeatable; with
    /// neither --peer nor --allow, any sender that knows its key).
    #[arg(long, value_name = "PUBLIC_KEY")]
    peer: Vec<PublicKey>,
    /// For `recv`: a file of the senders' public keys it accepts, one per
    /// line (`#` starts a comment).
    #[arg(long, value_name = "FILE")]
    allow: Option<PathBuf>,
    /// A file holding a pre-shared key (64 hex digits) that both ends must
    /// have, mixed into the handshake.
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
pub(crate) const NO_ANSWER_HINT: &str = "is `ltx recv` running there, is --peer the public \
key it printed, and, if it was started with --allow or --peer, does it list this sender's \
public key (`ltx keygen --show` on this sender's --key file)?";

impl KeyArgs {
    fn psk(&self) -> anyhow::Result<Option<PresharedKey>> {
        let Some(path) = &self.psk else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the pre-shared key file {}", path.display()))?;
        let key = text
            .lines()
            .next()
            .unwrap_or_default()
            .parse()
            .with_context(|| format!("{} does not hold 64 hex digits", path.display()))?;
        Ok(Some(key))
    }

    /// The receiver's security: its key (required) and whom it accepts.
    pub(crate) fn receiver(&self) -> anyhow::Result<SecurityConfig> {
        let Some(path) = &self.key else {
            bail!(RECV_NEEDS_A_KEY);
        };
        let mut security = SecurityConfig::new(read_keypair(path)?);
        security.psk = self.psk()?;
        if self.allow.is_some() || !self.peer.is_empty() {
            let mut allowed = match &self.allow {
                Some(path) => std::fs::read_to_string(path)
                    .with_context(|| format!("reading the allow file {}", path.display()))?
                    .parse::<AllowList>()
                    .with_context(|| format!("in the allow file {}", path.display()))?,
                None => AllowList::default(),
            };
            for key in &self.peer {
                allowed.insert(*key);
            }
            security.allowed_clients = Some(Arc::new(allowed));
        }
        Ok(security)
    }

    /// The sender's security (its key, fresh if none is given) and the
    /// receiver's public key (required).
    pub(crate) fn sender(&self) -> anyhow::Result<(SecurityConfig, PublicKey)> {
        let peer = match self.peer.as_slice() {
            [] => bail!(SEND_NEEDS_THE_PEER),
            [one] => *one,
            _ => bail!("ltx send connects to one receiver: give --peer once"),
        };
        if self.allow.is_some() {
            bail!("--allow is for ltx recv: a sender names its one receiver with --peer");
        }
        let keypair = match &self.key {
            Some(path) => read_keypair(path)?,
            None => ltx::generate_keypair(),
        };
        let mut security = SecurityConfig::new(keypair);
        security.psk = self.psk()?;
        Ok((security, peer))
    }
}
