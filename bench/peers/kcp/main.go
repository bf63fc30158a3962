// Command kcp-peer is the kcp-go peer of `ltx-bench emu`: one transfer of a
// generated payload over a kcp-go session with Reed-Solomon FEC, set up as
// kcptun users run it in its fastest mode.
//
//	kcp-peer recv --listen ADDR --size N --seed S --window PACKETS
//	kcp-peer send --connect ADDR --size N --seed S --window PACKETS
//	kcp-peer pattern --seed S
//
// The receiver (the server) takes one session, checks every byte against the
// payload, answers with one byte once it has all of them, and prints one
// JSON line; the sender (the client) writes the payload, waits for that
// byte, and prints its own line. See payload.go for the bytes and the
// report's fields. `pattern` prints the ends of the payload's block, so
// that the benchmark can check that this program makes the same bytes as
// its Rust peers.
package main

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"
	"golang.org/x/sys/unix"
)

// kcptun's "fast3" mode: no delay, a 10 ms internal clock, fast retransmit
// after two duplicate acknowledgements, congestion control off.
const (
	noDelay    = 1
	intervalMs = 10
	fastResend = 2
	noCongest  = 1
)

// kcptun's default FEC: 10 data shards and 3 parity shards per group.
const (
	dataShards   = 10
	parityShards = 3
)

// kcptun's default MTU (UDP payload bytes per packet) and socket buffers.
const (
	mtu        = 1350
	socketBuf  = 4 << 20
	readBuffer = 1 << 20
)

// kcp has no graceful close: the receiver answers with one byte once it has
// the whole payload, the sender acknowledges the answer with one more, and
// the receiver waits at most lingerLimit for it before it exits (its figures
// are taken before). Without that, a lost answer would leave the sender
// waiting for good.
const lingerLimit = 5 * time.Second

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "recv" && os.Args[1] != "send" && os.Args[1] != "pattern") {
		fmt.Fprintln(os.Stderr, "usage: kcp-peer recv|send|pattern [options]")
		os.Exit(2)
	}
	role := os.Args[1]
	flags := flag.NewFlagSet(role, flag.ExitOnError)
	listen := flags.String("listen", "", "UDP address to listen on (recv)")
	connect := flags.String("connect", "", "receiver's UDP address (send)")
	size := flags.Uint64("size", 0, "payload bytes")
	seed := flags.Uint64("seed", 1, "payload seed")
	window := flags.Int("window", 1024, "send and receive windows, packets")
	flags.Parse(os.Args[2:])
	if role == "pattern" {
		block := newPattern(*seed)
		line, _ := json.Marshal(map[string]any{
			"len":  len(block),
			"head": hex.EncodeToString(block[:32]),
			"tail": hex.EncodeToString(block[len(block)-32:]),
		})
		fmt.Println(string(line))
		return
	}
	if *size == 0 {
		fail(fmt.Errorf("--size must be more than 0"))
	}
	pattern := newPattern(*seed)
	var report map[string]any
	var err error
	if role == "recv" {
		report, err = receive(*listen, *size, pattern, *window)
	} else {
		report, err = send(*connect, *size, pattern, *window)
	}
	if err != nil {
		fail(err)
	}
	report["system"] = "kcp-fec"
	report["role"] = role
	report["cpu_s"] = cpuSeconds()
	line, _ := json.Marshal(report)
	fmt.Println(string(line))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "error: %v\n", err)
	os.Exit(1)
}

// tune applies the kcptun settings to a session.
func tune(s *kcp.UDPSession, window int) {
	s.SetStreamMode(true)
	s.SetWriteDelay(false)
	s.SetNoDelay(noDelay, intervalMs, fastResend, noCongest)
	s.SetWindowSize(window, window)
	s.SetMtu(mtu)
	s.SetACKNoDelay(false)
	s.SetReadBuffer(socketBuf)
	s.SetWriteBuffer(socketBuf)
}

func receive(listen string, size uint64, pattern []byte, window int) (map[string]any, error) {
	// No block cipher: kcptun's default is AES, but the other peers' costs
	// are compared without the cost of encryption where it can be left out.
	listener, err := kcp.ListenWithOptions(listen, nil, dataShards, parityShards)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", listen, err)
	}
	listener.SetReadBuffer(socketBuf)
	listener.SetWriteBuffer(socketBuf)
	session, err := listener.AcceptKCP()
	if err != nil {
		return nil, fmt.Errorf("accepting: %w", err)
	}
	tune(session, window)
	verifier := newVerifier(pattern)
	buf := make([]byte, readBuffer)
	var first int64
	for verifier.received < size {
		n, err := session.Read(buf)
		if n > 0 && first == 0 {
			first = monotonicNs()
		}
		// Bytes past the size are counted too, so that they fail the check.
		verifier.feed(buf[:n])
		if err != nil {
			if err == io.EOF {
				break
			}
			return nil, fmt.Errorf("reading: %w", err)
		}
	}
	end := monotonicNs()
	if _, err := session.Write([]byte{1}); err != nil {
		return nil, fmt.Errorf("answering: %w", err)
	}
	session.SetReadDeadline(time.Now().Add(lingerLimit))
	session.Read(buf[:1])
	session.Close()
	listener.Close()
	return verifier.report(size, first, end), nil
}

func send(connect string, size uint64, pattern []byte, window int) (map[string]any, error) {
	start := monotonicNs()
	session, err := kcp.DialWithOptions(connect, nil, dataShards, parityShards)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", connect, err)
	}
	tune(session, window)
	for left := size; left > 0; {
		n := uint64(len(pattern))
		if left < n {
			n = left
		}
		if _, err := session.Write(pattern[:n]); err != nil {
			return nil, fmt.Errorf("writing: %w", err)
		}
		left -= n
	}
	answer := make([]byte, 1)
	if _, err := io.ReadFull(session, answer); err != nil {
		return nil, fmt.Errorf("waiting for the receiver's answer: %w", err)
	}
	snmp := kcp.DefaultSnmp.Copy()
	if _, err := session.Write([]byte{1}); err != nil {
		return nil, fmt.Errorf("acknowledging the answer: %w", err)
	}
	// Time for kcp to repeat the acknowledgement once or twice if it is lost.
	time.Sleep(2*time.Duration(session.GetSRTT())*time.Millisecond + 100*time.Millisecond)
	session.Close()
	return map[string]any{
		"bytes":      size,
		"start_ns":   start,
		"wire_bytes": snmp.OutBytes,
	}, nil
}

// monotonicNs reads CLOCK_MONOTONIC, which every process on the machine
// shares, whatever network namespace it runs in.
func monotonicNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		fail(err)
	}
	return ts.Nano()
}

// cpuSeconds is the process's CPU time so far, user plus system.
func cpuSeconds() float64 {
	var usage unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &usage); err != nil {
		fail(err)
	}
	return float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e9
}
