// go-watch: the lab's client built with the Go toolchain itself (Debian's golang-go), so the
// socket is dialed by the very code kubelet and client-go use: net.Dialer with KeepAlive 30 s,
// which turns keepalive on and sets its idle and interval with setsockopt right after
// connect() returns. It then holds a watch stream ("events N" to lab-server) and prints one
// JSON line per event, as lab-client does: connected, ok, error (with errno), redialed.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// monoMs is CLOCK_MONOTONIC in milliseconds, the clock the lab's tests compare events with.
func monoMs() int64 {
	var ts syscall.Timespec
	// 1: CLOCK_MONOTONIC.
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Sec*1000 + ts.Nsec/1_000_000
}

func emit(event string, fields map[string]any) {
	fields["event"] = event
	fields["mono_ms"] = monoMs()
	line, _ := json.Marshal(fields)
	fmt.Println(string(line))
}

func localPort(c net.Conn) int {
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

func dial(peer string, keepalive time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: keepalive}
	return d.Dial("tcp", peer)
}

// watch sends the watch request and reads events until the connection fails.
func watch(c net.Conn, every int) error {
	if _, err := fmt.Fprintf(c, "events %d\n", every); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	for {
		if _, err := r.ReadString('\n'); err != nil {
			return err
		}
		emit("ok", map[string]any{"local_port": localPort(c)})
	}
}

func report(op string, err error, port int) {
	fields := map[string]any{"op": op, "error": err.Error(), "local_port": port}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		fields["errno"] = int(errno)
	}
	emit("error", fields)
}

func main() {
	peer := flag.String("peer", "198.51.100.2:6443", "the server")
	every := flag.Int("every", 3600, "seconds between the server's watch events")
	keepalive := flag.Duration("keepalive", 30*time.Second, "net.Dialer.KeepAlive (kubelet: 30s)")
	lifetime := flag.Duration("lifetime", 30*time.Minute, "exit after this long")
	flag.Parse()
	go func() {
		time.Sleep(*lifetime)
		emit("done", map[string]any{})
		os.Exit(0)
	}()
	c, err := dial(*peer, *keepalive)
	if err != nil {
		report("connect", err, 0)
		os.Exit(1)
	}
	emit("connected", map[string]any{"local_port": localPort(c), "peer": *peer})
	for {
		err := watch(c, *every)
		report("read", err, localPort(c))
		c.Close()
		// Re-dial until it works, as client-go's watch does; bounded by the lifetime.
		for {
			if c, err = dial(*peer, *keepalive); err == nil {
				break
			}
			report("connect", err, 0)
			time.Sleep(200 * time.Millisecond)
		}
		emit("redialed", map[string]any{"local_port": localPort(c)})
	}
}
