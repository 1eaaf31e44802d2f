package redislimit

import "testing"

// FuzzParseLeaseReply: the lease script's reply, as Redis returns it, is
// either refused as malformed or read into a result that keeps
// LeaseResult's promises: nothing granted to a banned subject or past a
// refusing window, a refused window that exists, a ban that started is a
// ban, and one non-negative count per window.
func FuzzParseLeaseReply(f *testing.F) {
	f.Add(int64(5), int64(-1), int64(0), int64(0), int64(5), int64(1700000060000), int64(5), int64(1700086400000), uint8(2), false)
	f.Add(int64(0), int64(1), int64(0), int64(0), int64(60), int64(1700000060000), int64(61), int64(1700086400000), uint8(2), false)
	f.Add(int64(0), int64(-1), int64(1700000900000), int64(1), int64(60), int64(1), int64(60), int64(1), uint8(2), false)
	f.Add(int64(1), int64(0), int64(0), int64(1), int64(-1), int64(0), int64(0), int64(0), uint8(1), true)
	f.Fuzz(func(t *testing.T, granted, refused, ban, started, u1, r1, u2, r2 int64, n uint8, asString bool) {
		n %= 3
		vals := []any{granted, refused, ban, started, u1, r1, u2, r2}[:4+2*n]
		if asString {
			vals[len(vals)-1] = "1"
		}
		res, err := parseLeaseReply(vals, int(n))
		if err != nil {
			return
		}
		if asString || res.Granted < 0 || res.Refused < -1 || res.Refused >= int(n) || len(res.Windows) != int(n) ||
			(res.Granted > 0 && (res.Banned || res.Refused >= 0)) || (res.BanStarted && !res.Banned) || res.Banned != !res.BanEnd.IsZero() {
			t.Fatalf("accepted %v as %+v", vals, res)
		}
		for _, w := range res.Windows {
			if w.Used < 0 {
				t.Fatalf("accepted %v with a negative count: %+v", vals, res)
			}
		}
	})
}
