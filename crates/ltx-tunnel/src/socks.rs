//! The SOCKS5 front end of a tunnel client (`--socks`): CONNECT, without
//! authentication or with a username and password (RFC 1929), to an IPv4
//! or IPv6 address or a name that the server resolves. Each accepted request becomes a tunnel stream; the server's
//! answer becomes the SOCKS reply.

use std::io;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::client::{OpenError, TunnelClient};
use crate::message_io::{read_message, write_message, MessageError};
use crate::splice::Spliced;
use crate::wire::socks5::{
    method_choice, user_pass_status, Command, Greeting, Method, Reply, ReplyCode, Request,
    SocksError, UserPass, MAX_GREETING_LEN, MAX_REQUEST_LEN, MAX_USER_PASS_LEN,
};
use crate::wire::{Destination, OpenStatus};

/// How long a SOCKS client has for its greeting and request.
pub const SOCKS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a SOCKS client was not served.
#[derive(Debug, thiserror::Error)]
pub enum SocksFailure {
    /// Its connection failed, or it sent nothing in time.
    #[error("the SOCKS client's connection: {0}")]
    Io(#[from] io::Error),
    /// It did not speak SOCKS5.
    #[error("not a SOCKS5 request: {0}")]
    Malformed(SocksError),
    /// It offered no method this front end accepts: "no authentication"
    /// without users, username/password with them.
    #[error("the SOCKS client does not offer {0}")]
    NoAcceptableMethod(&'static str),
    /// Its username and password are not among the users.
    #[error("the SOCKS client's username {0:?} or its password is wrong")]
    BadCredentials(String),
    /// It asked for another command than CONNECT.
    #[error("the SOCKS command {0:?} is not supported (only CONNECT)")]
    Unsupported(Command),
    /// The tunnel did not open (the server refused, or the connection to
    /// it failed).
    #[error("{destination}: {error}")]
    NotOpened {
        /// Where the client asked to go.
        destination: Destination,
        /// Why it did not.
        error: OpenError,
    },
}

impl From<MessageError<SocksError>> for SocksFailure {
    fn from(error: MessageError<SocksError>) -> SocksFailure {
        match error {
            MessageError::Io(e) => SocksFailure::Io(e),
            MessageError::Malformed(e) => SocksFailure::Malformed(e),
        }
    }
}

/// Serves one SOCKS client on `tcp` through `client`: the negotiation,
/// the request, the tunnel stream, the reply, then the copying. Returns
/// where it went and how it ended.
/// With `users`, a client must give one's username and password.
pub async fn serve_socks5(
    client: &TunnelClient,
    mut tcp: TcpStream,
    users: Option<&SocksUsers>,
) -> Result<(Destination, Spliced), SocksFailure> {
    let negotiation = negotiate(&mut tcp, users);
    let request = match tokio::time::timeout(SOCKS_HANDSHAKE_TIMEOUT, negotiation).await {
        Ok(Ok(request)) => request,
        Ok(Err(failure)) => return Err(failure),
        Err(_) => {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no SOCKS request in time").into())
        }
    };
    let destination = request.destination;
    match client.open(&destination).await {
        Ok(stream) => {
            reply(&mut tcp, ReplyCode::Succeeded).await?;
            Ok((destination, stream.splice(tcp).await))
        }
        Err(error) => {
            let code = match &error {
                OpenError::NotOpened(result) => reply_code(result.status),
                _ => ReplyCode::GeneralFailure,
            };
            reply(&mut tcp, code).await?;
            Err(SocksFailure::NotOpened { destination, error })
        }
    }
}

/// The greeting and the request; a failure is answered (where SOCKS5 has
/// an answer for it) before it is returned.
async fn negotiate(
    tcp: &mut TcpStream,
    users: Option<&SocksUsers>,
) -> Result<Request, SocksFailure> {
    let greeting = read_message(tcp, MAX_GREETING_LEN, Greeting::parse).await?;
    let (method, name) = match users {
        None => (Method::NO_AUTHENTICATION, "\"no authentication\""),
        Some(_) => (Method::USERNAME_PASSWORD, "username/password"),
    };
    if !greeting.offers(method) {
        tcp.write_all(&method_choice(Method::NONE_ACCEPTABLE))
            .await?;
        return Err(SocksFailure::NoAcceptableMethod(name));
    }
    tcp.write_all(&method_choice(method)).await?;
    if let Some(users) = users {
        let given = read_message(tcp, MAX_USER_PASS_LEN, UserPass::parse).await?;
        let accepted = users.accepts(&given);
        tcp.write_all(&user_pass_status(accepted)).await?;
        if !accepted {
            let name = String::from_utf8_lossy(&given.username).into_owned();
            return Err(SocksFailure::BadCredentials(name));
        }
    }
    let request = match read_message(tcp, MAX_REQUEST_LEN, Request::parse).await {
        Ok(request) => request,
        Err(MessageError::Malformed(e)) => {
            reply(tcp, e.reply_code()).await?;
            return Err(SocksFailure::Malformed(e));
        }
        Err(e) => return Err(e.into()),
    };
    if request.command != Command::Connect {
        reply(tcp, ReplyCode::CommandNotSupported).await?;
        return Err(SocksFailure::Unsupported(request.command));
    }
    Ok(request)
}

/// Sends a reply. After a failure the caller drops the connection, which
/// closes it with a FIN (RFC 1928 asks for a close soon after), not a
/// reset, which could make the client lose the reply unread.
async fn reply(tcp: &mut TcpStream, code: ReplyCode) -> io::Result<()> {
    write_message(tcp, |out| Reply::new(code).emit(out)).await
}

/// The SOCKS reply for a tunnel server's answer.
pub fn reply_code(status: OpenStatus) -> ReplyCode {
    match status {
        OpenStatus::Connected => ReplyCode::Succeeded,
        OpenStatus::Refused => ReplyCode::ConnectionRefused,
        OpenStatus::NotPermitted => ReplyCode::NotAllowed,
        OpenStatus::Unreachable => ReplyCode::HostUnreachable,
        OpenStatus::LimitReached | OpenStatus::Failed => ReplyCode::GeneralFailure,
    }
}

/// The users a SOCKS front end accepts: usernames and passwords.
#[derive(Clone, Default)]
pub struct SocksUsers {
    users: Vec<UserPass>,
}

impl std::fmt::Debug for SocksUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.users
                    .iter()
                    .map(|u| String::from_utf8_lossy(&u.username)),
            )
            .finish()
    }
}

/// Why a users file was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsersError {
    /// A line that is not `username:password`, each 1 to 255 bytes.
    #[error("line {line}: not USERNAME:PASSWORD (each 1 to 255 bytes, the username without ':')")]
    Line {
        /// The line's number, from 1.
        line: usize,
    },
    /// No user at all.
    #[error("no USERNAME:PASSWORD line")]
    Empty,
}

impl SocksUsers {
    /// Reads a users file: one `username:password` per line (the password
    /// runs to the line's end and may hold ':'); blank lines and lines
    /// starting with `#` are skipped.
    pub fn parse(text: &str) -> Result<SocksUsers, UsersError> {
        let mut users = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let bad = UsersError::Line { line: i + 1 };
            let (username, password) = line.split_once(':').ok_or(bad.clone())?;
            let fits = |s: &str| (1..=255).contains(&s.len());
            if !fits(username) || !fits(password) {
                return Err(bad);
            }
            users.push(UserPass {
                username: username.as_bytes().to_vec(),
                password: password.as_bytes().to_vec(),
            });
        }
        if users.is_empty() {
            return Err(UsersError::Empty);
        }
        Ok(SocksUsers { users })
    }

    /// How many users there are.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether there are none (a parsed file always has one).
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// Whether `given` is one of the users. Every user is compared, each
    /// in time that does not depend on where the bytes differ, so the
    /// answer's timing does not tell how close a guess came.
    fn accepts(&self, given: &UserPass) -> bool {
        self.users.iter().fold(false, |found, user| {
            let same = equal_in_constant_time(&user.username, &given.username)
                & equal_in_constant_time(&user.password, &given.password);
            found | same
        })
    }
}

/// Byte strings compared without an early exit on the first difference.
fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_file_reads_lines_of_username_and_password() {
        let users = SocksUsers::parse("# who\nalice:s3cret\n\nbob:pa:ss\r\n").unwrap();
        assert_eq!(users.len(), 2);
        let given = |u: &str, p: &str| UserPass {
            username: u.as_bytes().to_vec(),
            password: p.as_bytes().to_vec(),
        };
        assert!(users.accepts(&given("alice", "s3cret")));
        assert!(users.accepts(&given("bob", "pa:ss")));
        assert!(!users.accepts(&given("alice", "s3cre")));
        assert!(!users.accepts(&given("bob", "s3cret")));
        assert!(!format!("{users:?}").contains("s3cret"));
    }

    #[test]
    fn a_bad_users_file_names_its_line() {
        assert_eq!(
            SocksUsers::parse("alice:x\nnocolon\n").unwrap_err(),
            UsersError::Line { line: 2 }
        );
        assert_eq!(
            SocksUsers::parse(":empty-user\n").unwrap_err(),
            UsersError::Line { line: 1 }
        );
        assert_eq!(
            SocksUsers::parse("# nothing\n").unwrap_err(),
            UsersError::Empty
        );
    }
}
