//! Reading one message of the [`wire`](crate::wire) formats from a byte
//! stream, exactly: not a byte past its end, so that the bytes after it
//! stay in the stream for whoever reads next.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::wire::Parsed;

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MessageError<E> {
    /// The stream failed, or ended before the message did.
    #[error("reading: {0}")]
    Io(#[from] io::Error),
    /// The bytes are not the message.
    #[error("malformed: {0}")]
    Malformed(E),
}

/// Reads from `reader` what `parse` asks for until it has a message. The
/// parser's bound on what it asks for (`max`, the message's longest) is
/// enforced here too, so a parser's mistake cannot grow the buffer.
pub(crate) async fn read_message<R, T, E>(
    reader: &mut R,
    max: usize,
    parse: impl Fn(&[u8]) -> Result<Parsed<T>, E>,
) -> Result<T, MessageError<E>>
where
    R: AsyncRead + Unpin,
{
    let mut buf = Vec::with_capacity(32);
    loop {
        match parse(&buf).map_err(MessageError::Malformed)? {
            Parsed::Complete { value, .. } => return Ok(value),
            Parsed::Incomplete { needed } => {
                let had = buf.len();
                if had >= max {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a message longer than its format allows",
                    )
                    .into());
                }
                buf.resize(needed.clamp(had + 1, max), 0);
                reader.read_exact(&mut buf[had..]).await?;
            }
        }
    }
}

/// Writes the bytes of one message.
pub(crate) async fn write_message<W>(
    writer: &mut W,
    emit: impl FnOnce(&mut Vec<u8>),
) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut bytes = Vec::with_capacity(64);
    emit(&mut bytes);
    writer.write_all(&bytes).await
}
