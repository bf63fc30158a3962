//! How a soak run ended, and what it reports.

use super::SoakProtection;
use crate::transfer::TransferNode;
use ltx_proto::{CloseReason, TraceEvent};
use std::fmt;
use std::time::Duration;

/// Which end of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum End {
    /// The end that writes the data (the client).
    Sender,
    /// The end that reads and checks it (the server).
    Receiver,
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            End::Sender => "sender",
            End::Receiver => "receiver",
        })
    }
}

/// How the receiver's bytes differ from what was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WrongData {
    /// A byte read differs from the byte sent at its offset.
    BytesDiffer,
    /// The stream ended before all the bytes sent.
    Short {
        /// Bytes read when it ended.
        read: u64,
    },
    /// More bytes were read than were sent.
    Long {
        /// Bytes read.
        read: u64,
    },
    /// The sender closed gracefully (it was told every byte was decoded)
    /// but the receiver never read them all.
    FalseClose {
        /// Bytes the receiver had read.
        read: u64,
    },
}

/// Why a run counts as hung.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hang {
    /// The virtual deadline passed with neither delivery nor a close.
    Deadline,
    /// Nothing was pending anywhere (no packet in flight, no timer) with
    /// neither delivery nor a close: a connection left without a timer.
    Stalled,
    /// The run took more simulator steps than it may (see the module's
    /// constants): a loop, or progress too slow to be any use.
    StepBudget,
    /// The transfer delivered or failed, but this end had not closed
    /// within three idle time-outs afterwards.
    NotClosed(End),
}

/// How a soak run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SoakOutcome {
    /// The receiver read exactly the bytes sent and the stream's end.
    Delivered,
    /// A connection ended before delivery, for this reason (the end that
    /// closed first).
    Error {
        /// The end whose connection closed first.
        end: End,
        /// Why.
        reason: CloseReason,
    },
    /// The receiver read something other than what was sent: always a bug.
    Wrong(WrongData),
    /// Neither delivered nor ended in time: always a bug (the idle
    /// time-out bounds how long a connection can wait).
    Hang(Hang),
}

impl SoakOutcome {
    /// The outcome's name: `delivered`, `error`, `wrong` or `hang`.
    pub fn label(&self) -> &'static str {
        match self {
            SoakOutcome::Delivered => "delivered",
            SoakOutcome::Error { .. } => "error",
            SoakOutcome::Wrong(_) => "wrong",
            SoakOutcome::Hang(_) => "hang",
        }
    }

    /// Whether the outcome is a bug: wrong data or a hang.
    pub fn is_failure(&self) -> bool {
        matches!(self, SoakOutcome::Wrong(_) | SoakOutcome::Hang(_))
    }

    /// Why, in words, for every outcome but `delivered`.
    pub fn reason(&self) -> Option<String> {
        match self {
            SoakOutcome::Delivered => None,
            SoakOutcome::Error { end, reason } => Some(format!("{end}: {}", describe(reason))),
            SoakOutcome::Wrong(wrong) => Some(match wrong {
                WrongData::BytesDiffer => "bytes read differ from the bytes sent".to_owned(),
                WrongData::Short { read } => format!("the stream ended after {read} bytes"),
                WrongData::Long { read } => format!("{read} bytes read, more than were sent"),
                WrongData::FalseClose { read } => {
                    format!("the sender closed gracefully with {read} bytes read by the receiver")
                }
            }),
            SoakOutcome::Hang(hang) => Some(match hang {
                Hang::Deadline => "the virtual deadline passed".to_owned(),
                Hang::Stalled => "nothing pending, no timer armed".to_owned(),
                Hang::StepBudget => "the simulator step budget ran out".to_owned(),
                Hang::NotClosed(end) => {
                    format!("the {end} had not closed three idle time-outs after the end")
                }
            }),
        }
    }
}

impl fmt::Display for SoakOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason() {
            Some(reason) => write!(f, "{} ({reason})", self.label()),
            None => f.write_str(self.label()),
        }
    }
}

/// A close reason in a few words, for reports and for grouping errors.
pub fn describe(reason: &CloseReason) -> String {
    match reason {
        CloseReason::LocallyClosed => "closed".to_owned(),
        CloseReason::LocallyAborted { code, reason } => format!("aborted ({code:#x}: {reason})"),
        CloseReason::ByPeer { code: 0, reason } if reason.is_empty() => {
            "closed by the peer".to_owned()
        }
        CloseReason::ByPeer { code, reason } => format!("closed by the peer ({code:#x}: {reason})"),
        CloseReason::IdleTimeout => "idle time-out".to_owned(),
        CloseReason::HandshakeTimeout => "handshake time-out".to_owned(),
        CloseReason::Unreachable(_) => "unreachable".to_owned(),
        CloseReason::ProtocolViolation(reason) => format!("protocol violation ({reason})"),
        CloseReason::HandshakeRefused(why) => format!("handshake refused ({why})"),
    }
}

/// What one soak run did.
#[derive(Debug, Clone, PartialEq)]
pub struct SoakReport {
    /// The run's seed.
    pub seed: u64,
    /// How it ended.
    pub outcome: SoakOutcome,
    /// Bytes the transfer was to carry.
    pub size: u64,
    /// Bytes the receiver read (and checked).
    pub read: u64,
    /// Virtual time from the start to the last byte read, if delivered.
    pub completion: Option<Duration>,
    /// The ideal completion time T* on the forward path.
    pub ideal: Duration,
    /// The virtual deadline the transfer had.
    pub deadline: Duration,
    /// Virtual time simulated, closes included.
    pub simulated: Duration,
    /// Simulator steps taken.
    pub steps: u64,
    /// Why the sender's connection ended, if it did.
    pub sender_close: Option<CloseReason>,
    /// Why the receiver's connection ended, if it did.
    pub receiver_close: Option<CloseReason>,
    /// Whether the path had an outage (either direction).
    pub outage: bool,
    /// How the packets were protected.
    pub protection: SoakProtection,
    /// Packets the links corrupted (one bit flipped), both directions.
    pub corrupted: u64,
    /// Packets the two ends refused as unauthentic (a bad AEAD tag, a bad
    /// handshake message, or the plain layer's checksum); never acted on.
    pub unauthentic: u64,
    /// The sender's trace events, with their times from the start, when
    /// asked for.
    pub trace: Vec<(Duration, TraceEvent)>,
}

/// Which end closed first, when both have (the sender on a tie, as the
/// end that drives the transfer).
pub(super) fn first_closed(sender: &TransferNode, receiver: &TransferNode) -> Option<End> {
    match (sender.closed_at(), receiver.closed_at()) {
        (Some(s), Some(r)) if r < s => Some(End::Receiver),
        (Some(_), _) => Some(End::Sender),
        (None, Some(_)) => Some(End::Receiver),
        (None, None) => None,
    }
}

/// How a run ended, from what the receiver read and how the connections
/// closed. Wrong data outranks everything; then a hang; then delivery;
/// then the first close.
pub(super) fn classify(
    size: u64,
    delivery: &crate::transfer::Delivery,
    sender_close: &Option<CloseReason>,
    receiver_close: &Option<CloseReason>,
    first: Option<End>,
    hang: Option<Hang>,
) -> SoakOutcome {
    if delivery.read > size {
        return SoakOutcome::Wrong(WrongData::Long {
            read: delivery.read,
        });
    }
    if !delivery.intact {
        return SoakOutcome::Wrong(match delivery.finished_at {
            Some(_) if delivery.read != size => WrongData::Short {
                read: delivery.read,
            },
            _ => WrongData::BytesDiffer,
        });
    }
    let delivered = delivery.finished_at.is_some();
    if !delivered && sender_close == &Some(CloseReason::LocallyClosed) {
        return SoakOutcome::Wrong(WrongData::FalseClose {
            read: delivery.read,
        });
    }
    if let Some(hang) = hang {
        return SoakOutcome::Hang(hang);
    }
    if delivered {
        return SoakOutcome::Delivered;
    }
    match first {
        Some(End::Sender) => SoakOutcome::Error {
            end: End::Sender,
            reason: sender_close.clone().expect("the sender closed"),
        },
        Some(End::Receiver) => SoakOutcome::Error {
            end: End::Receiver,
            reason: receiver_close.clone().expect("the receiver closed"),
        },
        None => SoakOutcome::Hang(Hang::Deadline),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::transfer::Delivery;

    fn delivery(read: u64, finished: bool, intact: bool) -> Delivery {
        Delivery {
            read,
            finished_at: finished.then(Instant::now),
            intact,
        }
    }

    #[test]
    fn wrong_data_outranks_a_hang_and_a_close() {
        let closed = Some(CloseReason::IdleTimeout);
        let outcome = classify(
            10,
            &delivery(4, false, false),
            &closed,
            &closed,
            Some(End::Sender),
            Some(Hang::Deadline),
        );
        assert_eq!(outcome, SoakOutcome::Wrong(WrongData::BytesDiffer));
        let outcome = classify(10, &delivery(11, false, true), &None, &None, None, None);
        assert_eq!(outcome, SoakOutcome::Wrong(WrongData::Long { read: 11 }));
        let outcome = classify(10, &delivery(9, true, false), &None, &None, None, None);
        assert_eq!(outcome, SoakOutcome::Wrong(WrongData::Short { read: 9 }));
    }

    #[test]
    fn a_graceful_close_without_delivery_is_wrong() {
        let graceful = Some(CloseReason::LocallyClosed);
        let peer = Some(CloseReason::ByPeer {
            code: 0,
            reason: String::new(),
        });
        let outcome = classify(
            10,
            &delivery(4, false, true),
            &graceful,
            &peer,
            Some(End::Sender),
            None,
        );
        assert_eq!(
            outcome,
            SoakOutcome::Wrong(WrongData::FalseClose { read: 4 })
        );
        // The same close after delivery is the normal end.
        let outcome = classify(
            10,
            &delivery(10, true, true),
            &graceful,
            &peer,
            Some(End::Sender),
            None,
        );
        assert_eq!(outcome, SoakOutcome::Delivered);
    }

    #[test]
    fn an_error_names_the_end_that_closed_first() {
        let idle = Some(CloseReason::IdleTimeout);
        let outcome = classify(
            10,
            &delivery(4, false, true),
            &idle,
            &idle,
            Some(End::Receiver),
            None,
        );
        assert_eq!(
            outcome,
            SoakOutcome::Error {
                end: End::Receiver,
                reason: CloseReason::IdleTimeout
            }
        );
        assert_eq!(outcome.reason().as_deref(), Some("receiver: idle time-out"));
        assert!(!outcome.is_failure());
    }

    #[test]
    fn delivery_that_does_not_wind_down_is_a_hang() {
        let outcome = classify(
            10,
            &delivery(10, true, true),
            &None,
            &None,
            None,
            Some(Hang::NotClosed(End::Sender)),
        );
        assert_eq!(outcome, SoakOutcome::Hang(Hang::NotClosed(End::Sender)));
        assert!(outcome.is_failure());
        let outcome = classify(10, &delivery(3, false, true), &None, &None, None, None);
        assert_eq!(outcome, SoakOutcome::Hang(Hang::Deadline));
    }
}
