// Command kcptun-peer is the kcptun-equivalent tunnel of `ltx-bench tunnel`:
// TCP connections carried as smux streams over one kcp-go session with
// Reed-Solomon FEC, set up with kcptun's defaults (kcptun itself is not
// served by the Go module proxy; its engine, kcp-go and smux, is).
//
//	kcptun-peer server --listen UDPADDR --target TCPADDR --window PACKETS
//	kcptun-peer client --listen TCPADDR --remote UDPADDR --window PACKETS
//
// The server accepts kcp sessions and connects each smux stream to
// --target; the client accepts TCP connections on --listen and opens one
// smux stream for each over its one session.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"
)

// kcptun's "fast" mode (its default): nodelay off, a 30 ms internal
// clock, fast retransmit after two duplicate acknowledgements, congestion
// control off.
const (
	noDelay    = 0
	intervalMs = 30
	fastResend = 2
	noCongest  = 1
)

// kcptun's defaults: 10 data and 3 parity shards, MTU 1350, 4 MiB socket
// buffers, smux version 1 with a 4 MiB session buffer, 2 MiB per stream
// and a keep-alive every 10 s.
const (
	dataShards   = 10
	parityShards = 3
	mtu          = 1350
	socketBuf    = 4 << 20
	smuxVersion  = 1
	smuxBuf      = 4 << 20
	streamBuf    = 2 << 20
	keepAlive    = 10 * time.Second
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "server" && os.Args[1] != "client") {
		fmt.Fprintln(os.Stderr, "usage: kcptun-peer server|client [options]")
		os.Exit(2)
	}
	role := os.Args[1]
	flags := flag.NewFlagSet(role, flag.ExitOnError)
	listen := flags.String("listen", "", "UDP (server) or TCP (client) address to listen on")
	target := flags.String("target", "", "TCP address each stream is connected to (server)")
	remote := flags.String("remote", "", "the server's UDP address (client)")
	window := flags.Int("window", 1024, "send and receive windows, packets")
	flags.Parse(os.Args[2:])
	var err error
	if role == "server" {
		err = server(*listen, *target, *window)
	} else {
		err = client(*listen, *remote, *window)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

// tune applies kcptun's session settings.
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

func smuxConfig() *smux.Config {
	c := smux.DefaultConfig()
	c.Version = smuxVersion
	c.MaxReceiveBuffer = smuxBuf
	c.MaxStreamBuffer = streamBuf
	c.KeepAliveInterval = keepAlive
	c.KeepAliveTimeout = 6 * keepAlive
	return c
}

func server(listen, target string, window int) error {
	l, err := kcp.ListenWithOptions(listen, nil, dataShards, parityShards)
	if err != nil {
		return err
	}
	l.SetReadBuffer(socketBuf)
	l.SetWriteBuffer(socketBuf)
	for {
		s, err := l.AcceptKCP()
		if err != nil {
			return err
		}
		tune(s, window)
		go serveSession(s, target)
	}
}

func serveSession(s *kcp.UDPSession, target string) {
	mux, err := smux.Server(s, smuxConfig())
	if err != nil {
		fmt.Fprintf(os.Stderr, "smux: %v\n", err)
		return
	}
	defer mux.Close()
	for {
		stream, err := mux.AcceptStream()
		if err != nil {
			return
		}
		go func() {
			conn, err := net.Dial("tcp", target)
			if err != nil {
				stream.Close()
				return
			}
			relay(conn.(*net.TCPConn), stream)
		}()
	}
}

func client(listen, remote string, window int) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	s, err := kcp.DialWithOptions(remote, nil, dataShards, parityShards)
	if err != nil {
		return err
	}
	tune(s, window)
	mux, err := smux.Client(s, smuxConfig())
	if err != nil {
		return err
	}
	for {
		conn, err := l.Accept()
		if err != nil {
			return err
		}
		stream, err := mux.OpenStream()
		if err != nil {
			conn.Close()
			return err
		}
		go relay(conn.(*net.TCPConn), stream)
	}
}

// relay copies both ways; the end of either direction closes both, as
// kcptun's own relay does (smux streams have no half-close).
func relay(conn *net.TCPConn, stream *smux.Stream) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(stream, conn); done <- struct{}{} }()
	go func() { io.Copy(conn, stream); done <- struct{}{} }()
	<-done
	conn.Close()
	stream.Close()
}
