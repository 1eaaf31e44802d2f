package httpx

import (
	"testing"
	"unsafe"
)

// Every request allocates one requestInfo: the request it hands on, its
// writer, its header values. A field added carelessly would take it to
// the next size class, 896 bytes, and every request would pay the
// difference.
func TestRequestInfoFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(requestInfo{}); n > 768 {
		t.Errorf("requestInfo is %d bytes, more than the 768-byte size class it was made to fit", n)
	}
}
