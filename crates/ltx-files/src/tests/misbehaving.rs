//! Peers that break the protocol, by mistake or on purpose: each side
//! reports a clear error, never panics, and the receiver stores nothing
//! under a final name that did not verify.

use super::*;

/// What a receiver made of `bytes` from a sender that then closes its
/// side: the frames it answered, and its lane's report.
async fn receive_from(dirs: &Dirs, bytes: Vec<u8>) -> (Vec<ReceiverFrame>, ReceiveLane) {
    let inbox = Inbox::directory(&dirs.dst, ReceiveOptions::default());
    let (a, b) = duplex(PIPE_LEN);
    let sender = async move {
        let (mut reader, mut writer) = split(a);
        // The receiver may stop reading early; what it did not read is lost.
        let _ = writer.write_all(&bytes).await;
        let _ = writer.shutdown().await;
        read_all_answers(&mut reader).await
    };
    let receiver = async {
        let (mut reader, mut writer) = split(b);
        receive_lane(&mut reader, &mut writer, &inbox, &Peer::unknown(), &|_| {}).await
    };
    tokio::join!(sender, receiver)
}

/// The lane's protocol error, or a panic saying what ended it instead.
fn protocol_error(lane: &ReceiveLane) -> &ProtocolError {
    match &lane.end {
        Err(TransferError::Protocol(error)) => error,
        other => panic!("{other:?}"),
    }
}

/// A stream that is not a file stream at all gets no answer: whatever
/// speaks there is not an ltx sender.
#[tokio::test]
async fn a_stream_that_is_not_ltx_gets_no_answer() {
    let dirs = Dirs::new();
    let (answers, lane) = receive_from(&dirs, b"GET / HTTP/1.1\r\n\r\n".to_vec()).await;
    assert_eq!(answers, []);
    assert_eq!(protocol_error(&lane), &ProtocolError::BadMagic(*b"GET "));
    assert_eq!(lane.lane, None);
    assert!(dirs.listing().is_empty());
}

/// A sender of an older or a newer version is refused with the version
/// each side speaks and which one to update.
#[tokio::test]
async fn another_version_is_refused_with_what_to_update() {
    for (preamble, update) in [
        (&b"LTXF\x01"[..], "update the sender"),
        (b"LTXF\x03\x00\x01", "update the receiver"),
    ] {
        let dirs = Dirs::new();
        let (answers, lane) = receive_from(&dirs, preamble.to_vec()).await;
        match &answers[..] {
            [ReceiverFrame::Refuse {
                reason: RefuseReason::Version,
                message,
            }] => assert!(message.as_str().ends_with(update), "{message}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(lane.end, Err(TransferError::Refused { .. })));
        assert!(dirs.listing().is_empty());
    }
}

/// Data with no offer before it is refused as malformed, and ends the
/// lane.
#[tokio::test]
async fn data_before_an_offer_is_refused() {
    let dirs = Dirs::new();
    let mut bytes = preamble();
    bytes.extend(sender_frames(&[SenderFrame::Data(b"unasked")]));
    let (answers, lane) = receive_from(&dirs, bytes).await;
    let error = protocol_error(&lane);
    assert_eq!(error.to_string(), "expected OFFER, LINK or BYE, got DATA");
    assert!(matches!(
        &answers[..],
        [ReceiverFrame::Refuse {
            reason: RefuseReason::Malformed,
            ..
        }]
    ));
    assert!(dirs.listing().is_empty());
}

/// A frame header that announces more than its kind allows is refused
/// before anything is read into memory, before an offer and during the
/// data; the data that arrived stays in the partial file, nothing under
/// the name.
#[tokio::test]
async fn oversized_frames_end_the_lane() {
    let dirs = Dirs::new();
    let mut bytes = preamble();
    bytes.extend([0x10, 0xff, 0xff]);
    let (answers, lane) = receive_from(&dirs, bytes).await;
    assert_eq!(
        protocol_error(&lane).to_string(),
        "frame 0x10 announces 65535 bytes; the limit is 4096"
    );
    assert!(matches!(
        &answers[..],
        [ReceiverFrame::Refuse {
            reason: RefuseReason::Malformed,
            ..
        }]
    ));

    let data = random_bytes(50, 1000);
    let mut bytes = preamble();
    bytes.extend(sender_frames(&[offer("f", 5000), SenderFrame::Data(&data)]));
    bytes.extend([0x12, 0x80, 0x01]);
    let (answers, lane) = receive_from(&dirs, bytes).await;
    assert_eq!(
        protocol_error(&lane),
        &ProtocolError::FrameTooLong {
            tag: 0x12,
            len: 0x8001,
            limit: wire::MAX_DATA_LEN
        }
    );
    match &answers[..] {
        [ReceiverFrame::Accept, ReceiverFrame::Outcome(Outcome::Failed { message })] => {
            assert!(
                message.as_str().contains("announces 32769 bytes"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(!dirs.dst.join("f").exists());
    assert_eq!(std::fs::read(dirs.part("f")).unwrap(), data);
}

/// A stream that ends in the middle of a frame is a broken stream, not a
/// short frame: the whole frames before it are kept for a rerun.
#[tokio::test]
async fn a_frame_cut_short_is_a_broken_stream() {
    let dirs = Dirs::new();
    let data = random_bytes(51, 3 * wire::MAX_DATA_LEN);
    let mut bytes = preamble();
    bytes.extend(file_frames("f", &data, blake3::hash(&data)));
    // The first two DATA frames and half the third.
    let whole = preamble().len()
        + sender_frames(&[offer("f", data.len() as u64)]).len()
        + 2 * (3 + wire::MAX_DATA_LEN);
    bytes.truncate(whole + 3 + wire::MAX_DATA_LEN / 2);
    let (answers, lane) = receive_from(&dirs, bytes).await;
    assert_eq!(answers, [ReceiverFrame::Accept]);
    assert!(matches!(
        lane.end,
        Err(TransferError::PeerClosed {
            stage: Stage::Data,
            ..
        })
    ));
    assert!(!dirs.dst.join("f").exists());
    assert_eq!(
        std::fs::read(dirs.part("f")).unwrap(),
        data[..2 * wire::MAX_DATA_LEN]
    );
}

/// Data past the offered size, an END before all of it, and a SEEK the
/// receiver did not offer are each a protocol error that names the
/// figures; none stores a file.
#[tokio::test]
async fn data_that_does_not_fit_the_offer_is_refused() {
    let data = random_bytes(52, 100);
    let cases: [(Vec<SenderFrame<'_>>, &str); 3] = [
        (
            vec![offer("f", 99), SenderFrame::Data(&data)],
            "the sender sent 100 bytes of a 99-byte file",
        ),
        (
            vec![
                offer("f", 100),
                SenderFrame::Data(&data[..50]),
                SenderFrame::End(blake3::hash(&data[..50])),
            ],
            "the sender sent 50 bytes of a 100-byte file",
        ),
        (
            vec![offer("f", 100), SenderFrame::Seek(50)],
            "the sender skipped to byte 50 from byte 0; the receiver has 0",
        ),
    ];
    for (frames, expected) in cases {
        let dirs = Dirs::new();
        let mut bytes = preamble();
        bytes.extend(sender_frames(&frames));
        let (answers, lane) = receive_from(&dirs, bytes).await;
        assert_eq!(protocol_error(&lane).to_string(), expected);
        match &answers[..] {
            [ReceiverFrame::Accept, ReceiverFrame::Outcome(Outcome::Failed { message })] => {
                assert!(message.as_str().contains(expected), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(!dirs.dst.join("f").exists(), "{expected}");
    }
}

/// A name that would leave the receiver's directory is refused as a bad
/// name, whatever the bytes after it.
#[tokio::test]
async fn a_name_that_climbs_out_is_refused() {
    let dirs = Dirs::new();
    let name = b"../escaped";
    let mut body = vec![0, name.len() as u8];
    body.extend_from_slice(name);
    body.push(0);
    body.extend_from_slice(&4u64.to_be_bytes());
    let mut bytes = preamble();
    bytes.extend([0x10, 0, body.len() as u8]);
    bytes.extend(body);
    bytes.extend(sender_frames(&[SenderFrame::Data(b"evil")]));
    let (answers, lane) = receive_from(&dirs, bytes).await;
    assert!(matches!(
        protocol_error(&lane),
        ProtocolError::BadName {
            error: NameError::DotComponent,
            ..
        }
    ));
    assert!(matches!(
        &answers[..],
        [ReceiverFrame::Refuse {
            reason: RefuseReason::BadName,
            ..
        }]
    ));
    assert!(!dirs.dst.parent().unwrap().join("escaped").exists());
    assert!(dirs.listing().is_empty());
}

/// One file of three with a wrong hash: that one is deleted and answered
/// as a mismatch; the others are stored, and the lane ends well.
#[tokio::test]
async fn a_wrong_hash_costs_only_its_own_file() {
    let dirs = Dirs::new();
    let files: Vec<Vec<u8>> = (0..3).map(|i| random_bytes(53 + i, 70_000)).collect();
    let mut bytes = preamble();
    for (i, data) in files.iter().enumerate() {
        let hash = if i == 1 {
            blake3::hash(b"not this")
        } else {
            blake3::hash(data)
        };
        bytes.extend(file_frames(&format!("f{i}"), data, hash));
    }
    bytes.extend(sender_frames(&[SenderFrame::Bye]));
    let (answers, lane) = receive_from(&dirs, bytes).await;
    lane.end.unwrap();
    assert_eq!(
        answers,
        [
            ReceiverFrame::Accept,
            ReceiverFrame::Outcome(Outcome::Stored),
            ReceiverFrame::Accept,
            ReceiverFrame::Outcome(Outcome::HashMismatch {
                actual: blake3::hash(&files[1])
            }),
            ReceiverFrame::Accept,
            ReceiverFrame::Outcome(Outcome::Stored),
            ReceiverFrame::Bye,
        ]
    );
    assert!(matches!(
        lane.files[1].outcome,
        FileOutcome::Failed(TransferError::HashMismatch { .. })
    ));
    assert_eq!(dirs.listing(), ["f0", "f2"]);
}

/// A stream of unknown size that grows past what the receiver takes in
/// one file fails with the limit named, and leaves nothing.
#[tokio::test]
async fn a_stream_past_the_limit_fails() {
    let dirs = Dirs::new();
    let inbox = Inbox::directory(
        &dirs.dst,
        ReceiveOptions {
            max_file_bytes: Some(100_000),
            ..ReceiveOptions::default()
        },
    );
    let sources = Sources::new([Source::Stream {
        reader: Box::new(std::io::Cursor::new(random_bytes(54, 300_000))),
        name: TransferName::parse("s").unwrap(),
    }]);
    let mut lanes = send_lanes(
        vec![duplex(PIPE_LEN)],
        &sources,
        &SendOptions::default(),
        &inbox,
        &Peer::unknown(),
        &|_| {},
    )
    .await;
    let (sent, received) = lanes.remove(0);
    match &sent.files[0].outcome {
        FileOutcome::Failed(TransferError::RemoteIo { message }) => {
            assert!(
                message.as_str().contains("100000 bytes, --max-file-size"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(received.files[0].outcome.error().is_some());
    assert!(dirs.listing().is_empty(), "{:?}", dirs.listing());
}

/// What a sender made of `answers` from a receiver that writes them once
/// it has read the preamble and the offer's header, then reads everything
/// it is sent: the sender's lane's report.
async fn send_to(dirs: &Dirs, data: &[u8], answers: Vec<u8>) -> SendLane {
    let src = dirs.source("f", data);
    let sources = Sources::new([Source::File {
        path: src,
        name: TransferName::parse("f").unwrap(),
    }]);
    let (a, b) = duplex(PIPE_LEN);
    let receiver = async move {
        let (mut reader, mut writer) = split(b);
        let mut head = [0; 7 + 3];
        let _ = reader.read_exact(&mut head).await;
        let _ = writer.write_all(&answers).await;
        let _ = writer.shutdown().await;
        let mut sink = Vec::new();
        let _ = reader.read_to_end(&mut sink).await;
    };
    let sender = async {
        let (mut reader, mut writer) = split(a);
        let options = SendOptions::default();
        let stop = Stop::never();
        send_lane(
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
    tokio::join!(sender, receiver).0
}

/// A receiver that claims more than the file, answers out of turn, or
/// sends garbage fails the sender's file with a protocol error.
#[tokio::test]
async fn a_receiver_that_breaks_the_rules_fails_the_file() {
    let data = random_bytes(55, 1000);
    let cases = [
        (
            receiver_frames(&[ReceiverFrame::Have {
                len: 1001,
                hash: blake3::hash(b""),
            }]),
            "the receiver has 1001 bytes of a 1000-byte file",
        ),
        (
            receiver_frames(&[ReceiverFrame::Outcome(Outcome::Stored)]),
            "expected ACCEPT, HAVE or REFUSE, got OUTCOME",
        ),
        (
            receiver_frames(&[ReceiverFrame::Bye]),
            "expected ACCEPT, HAVE or REFUSE, got BYE",
        ),
        (vec![0x99, 0, 0], "unknown frame 0x99"),
    ];
    for (answers, expected) in cases {
        let dirs = Dirs::new();
        let lane = send_to(&dirs, &data, answers).await;
        match &lane.end {
            Err(TransferError::Protocol(error)) => assert_eq!(error.to_string(), expected),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&lane.files[0].outcome, FileOutcome::Failed(TransferError::Protocol(e)) if e.to_string() == expected),
            "{:?}",
            lane.files
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any bytes at all from a receiver end the sender's lane one way or
    /// another, without a panic.
    #[test]
    fn random_answers_never_panic_the_sender(
        answers in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let dirs = Dirs::new();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let lane = rt.block_on(send_to(&dirs, b"some data", answers));
        // A lane that ended well has the file's report.
        prop_assert!(lane.end.is_err() || lane.files.len() == 1);
    }
}
