package redislimit

import "testing"

// FuzzParseReply feeds the script-reply decoder arbitrary integer replies:
// it must reject malformed ones without panicking and never accept
// negative counts or inconsistent statuses.
func FuzzParseReply(f *testing.F) {
	f.Add(int64(0), int64(-1), int64(0), int64(1), int64(1700000060000), int64(1), int64(1700086400000), 2)
	f.Add(int64(1), int64(0), int64(0), int64(60), int64(1700000060000), int64(60), int64(1700086400000), 2)
	f.Add(int64(2), int64(-1), int64(1700000900000), int64(60), int64(1), int64(60), int64(1), 2)
	f.Add(int64(7), int64(9), int64(0), int64(-1), int64(0), int64(0), int64(0), 1)
	f.Fuzz(func(t *testing.T, status, refused, ban, u1, e1, u2, e2 int64, n int) {
		n = n % 4
		if n < 0 {
			n = -n
		}
		vals := []any{status, refused, ban, u1, e1, u2, e2}
		if 3+2*n < len(vals) {
			vals = vals[:3+2*n]
		}
		res, err := parseReply(vals, n)
		if err != nil {
			return
		}
		if len(res.Windows) != n || (res.Allowed && (res.Banned || res.Refused != -1)) {
			t.Fatalf("accepted an inconsistent reply: %+v", res)
		}
		for _, w := range res.Windows {
			if w.Used < 0 {
				t.Fatalf("accepted a negative count: %+v", res)
			}
		}
	})
}
