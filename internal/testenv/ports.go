package testenv

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort returns a loopback port that TCP and UDP can both bind right
// now, for a server that must be told its port before it starts (Pebble
// validating on the API's ports, Knot in its configuration file). It is
// chosen below the kernel's ephemeral range: a port found by listening on
// 127.0.0.1:0 comes from that range, from which the kernel also gives every
// outgoing connection its source port, so another test's connection could
// take it before the server binds it ("address already in use"); ports
// below the range are never handed out that way.
func FreePort() (int, error) {
	first := EphemeralFirst()
	for range 100 {
		port := 10000 + rand.IntN(first-10000)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken: try another
		}
		pc, err := net.ListenPacket("udp", addr)
		ln.Close()
		if err != nil {
			continue
		}
		pc.Close()
		return port, nil
	}
	return 0, errors.New("testenv: no free loopback port below the ephemeral range")
}

// EphemeralFirst is the first port of the kernel's ephemeral range, as
// Linux says in /proc; elsewhere 32768, Linux's default.
func EphemeralFirst() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				return n
			}
		}
	}
	return 32768
}
