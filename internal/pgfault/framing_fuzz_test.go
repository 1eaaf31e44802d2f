package pgfault

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzReadMessage: the messages a PostgreSQL peer sends are cut where
// their length fields say, and what is read whole is, message after
// message, the bytes that were sent. Lengths claiming more than the
// stream holds are skipped: readMessage would allocate them before the
// short read fails (up to 1 GiB, a test proxy's accepted cost).
func FuzzReadMessage(f *testing.F) {
	f.Add([]byte("Q\x00\x00\x00\x0dSELECT 1\x00Z\x00\x00\x00\x05I"))
	f.Add([]byte("X\x00\x00\x00\x03"))
	f.Add([]byte("X\x00\x00"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bytes.NewReader(stream)
		var got []byte
		for {
			rest := stream[len(got):]
			if len(rest) >= 5 && int(binary.BigEndian.Uint32(rest[1:5])) > len(rest) {
				t.Skip()
			}
			msg, err := readMessage(r)
			if err != nil {
				break
			}
			if len(msg) < 5 || int(binary.BigEndian.Uint32(msg[1:5])) != len(msg)-1 {
				t.Fatalf("read message %q, whose length field is not its own", msg)
			}
			got = append(got, msg...)
		}
		if !bytes.HasPrefix(stream, got) {
			t.Fatalf("read %q from %q", got, stream)
		}
	})
}
