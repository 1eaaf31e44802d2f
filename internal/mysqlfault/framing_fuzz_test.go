package mysqlfault

import (
	"bytes"
	"testing"
)

// FuzzReadPacket: the packets a MySQL peer sends are cut where their
// 3-byte lengths say, and what is read whole is, packet after packet,
// the bytes that were sent.
func FuzzReadPacket(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00\x0e\x05\x00\x00\x01hello"))
	f.Add([]byte("\xff\xff\xff\x00"))
	f.Add([]byte("\x00\x00\x00\x07"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bytes.NewReader(stream)
		var got []byte
		for {
			hdr, body, err := readPacket(r)
			if err != nil {
				break
			}
			if n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16; n != len(body) {
				t.Fatalf("read a %d-byte body under a header saying %d", len(body), n)
			}
			got = append(append(got, hdr[:]...), body...)
		}
		if !bytes.HasPrefix(stream, got) {
			t.Fatalf("read %q from %q", got, stream)
		}
	})
}
