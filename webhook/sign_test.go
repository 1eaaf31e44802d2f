package webhook

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSignAndVerify(t *testing.T) {
	const secret = "whsec_test"
	body := []byte(`{"id":"evt_1","type":"domain.active"}`)
	at := time.Unix(1_800_000_000, 0)
	good := Sign(secret, at, body)
	v1 := strings.TrimPrefix(good, "t=1800000000,v1=")
	other := strings.TrimPrefix(Sign("whsec_other", at, body), "t=1800000000,v1=")
	if good == v1 || len(v1) != 64 {
		t.Fatalf("Sign = %q, want t=1800000000,v1=<64 hex digits>", good)
	}
	// The vector a receiver in any language can check against.
	if want := "t=1800000000,v1=" + v1; Sign(secret, at.Add(999*time.Millisecond), body) != want {
		t.Fatalf("Sign is not stable within the second")
	}
	for _, tc := range []struct {
		name, secret, header string
		body                 []byte
		now                  time.Time
		tolerance            time.Duration
		want                 error
	}{
		{"valid", secret, good, body, at, time.Minute, nil},
		{"valid at the edge of the tolerance", secret, good, body, at.Add(time.Minute), time.Minute, nil},
		{"default tolerance is five minutes", secret, good, body, at.Add(5 * time.Minute), 0, nil},
		{"too old", secret, good, body, at.Add(time.Minute + time.Second), time.Minute, ErrTimestampOutOfTolerance},
		{"from the future", secret, good, body, at.Add(-time.Minute - time.Second), time.Minute, ErrTimestampOutOfTolerance},
		{"wrong secret", "whsec_other", good, body, at, time.Minute, ErrNoValidSignature},
		{"body changed", secret, good, append([]byte(nil), append(body, ' ')...), at, time.Minute, ErrNoValidSignature},
		{"timestamp changed", secret, "t=1800000001,v1=" + v1, body, at, time.Minute, ErrNoValidSignature},
		{"one of two signatures matches (secret rotation)", secret, "t=1800000000,v1=" + other + ",v1=" + v1, body, at, time.Minute, nil},
		{"unknown schemes are skipped", secret, "t=1800000000,v0=abc,v1=" + v1 + ",v2=zz", body, at, time.Minute, nil},
		{"spaces around items", secret, "t=1800000000, v1=" + v1, body, at, time.Minute, nil},
		{"order does not matter", secret, "v1=" + v1 + ",t=1800000000", body, at, time.Minute, nil},
		{"upper-case hex", secret, "t=1800000000,v1=" + strings.ToUpper(v1), body, at, time.Minute, nil},
		{"empty", secret, "", body, at, time.Minute, ErrInvalidHeader},
		{"no timestamp", secret, "v1=" + v1, body, at, time.Minute, ErrInvalidHeader},
		{"no v1", secret, "t=1800000000", body, at, time.Minute, ErrInvalidHeader},
		{"two timestamps", secret, "t=1800000000,t=1800000000,v1=" + v1, body, at, time.Minute, ErrInvalidHeader},
		{"negative timestamp", secret, "t=-1800000000,v1=" + v1, body, at, time.Minute, ErrInvalidHeader},
		{"signed timestamp", secret, "t=+1800000000,v1=" + v1, body, at, time.Minute, ErrInvalidHeader},
		{"timestamp overflows", secret, "t=99999999999999999999,v1=" + v1, body, at, time.Minute, ErrInvalidHeader},
		{"short signature", secret, "t=1800000000,v1=" + v1[:62], body, at, time.Minute, ErrInvalidHeader},
		{"not hex", secret, "t=1800000000,v1=" + strings.Repeat("g", 64), body, at, time.Minute, ErrInvalidHeader},
		{"item without =", secret, "t=1800000000,v1=" + v1 + ",junk", body, at, time.Minute, ErrInvalidHeader},
		{"too long", secret, "t=1800000000,v1=" + v1 + strings.Repeat(",v0=x", 1000), body, at, time.Minute, ErrInvalidHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verifyAt(tc.secret, tc.header, tc.body, tc.tolerance, tc.now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("verify(%q) = %v, want %v", tc.header, err, tc.want)
			}
			if err != nil && (strings.Contains(err.Error(), tc.secret) || strings.Contains(err.Error(), v1)) {
				t.Fatalf("error %q shows the secret or the signature", err)
			}
		})
	}
}

// FuzzParseSignature: the header parser never panics, accepts only
// headers with one decimal t and at least one 32-byte v1, and whatever it
// accepts, Sign's form of the same values is accepted as the same.
func FuzzParseSignature(f *testing.F) {
	for _, s := range []string{
		"t=1800000000,v1=" + strings.Repeat("ab", 32), "t=1,v1=" + strings.Repeat("00", 32) + ",v1=" + strings.Repeat("ff", 32),
		"", "t=", "v1=", "t=1,t=2", "t=1,v1=zz", ",,,", "t=1,v0=x,v1=" + strings.Repeat("0", 64), "t=0x10,v1=" + strings.Repeat("0", 64),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		ts, sigs, err := parseSignature(header)
		if err != nil {
			if !errors.Is(err, ErrInvalidHeader) || ts != 0 || sigs != nil {
				t.Fatalf("parse(%q) = %d, %x, %v", header, ts, sigs, err)
			}
			return
		}
		if ts < 0 || len(sigs) == 0 || len(header) > maxHeaderLength {
			t.Fatalf("accepted %q as %d, %x", header, ts, sigs)
		}
		for _, s := range sigs {
			if len(s) != 32 {
				t.Fatalf("accepted %q with a %d-byte signature", header, len(s))
			}
		}
		if !strings.Contains(header, "t="+strconv.FormatInt(ts, 10)) && !strings.Contains(header, "t=0") {
			t.Fatalf("accepted %q as timestamp %d, which it does not hold", header, ts)
		}
	})
}

func TestRetrySchedule(t *testing.T) {
	created := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	// The delays before jitter: 30 s doubling to an hour.
	for n, want := range map[int]time.Duration{1: 30 * time.Second, 2: time.Minute, 3: 2 * time.Minute, 7: 32 * time.Minute, 8: time.Hour, 30: time.Hour} {
		if got := retryDelay(n); got != want {
			t.Errorf("retryDelay(%d) = %v, want %v", n, got, want)
		}
	}
	// Jitter places the retry within ±25% of the delay.
	for _, tc := range []struct {
		jitter float64
		want   time.Duration
	}{{0, 45 * time.Second}, {0.5, time.Minute}, {0.999999, 75 * time.Second}} {
		next, ok := nextAttempt(created, created, 2, tc.jitter, DefaultRetryFor, 0)
		if d := next.Sub(created); !ok || d < tc.want-time.Millisecond || d > tc.want {
			t.Errorf("jitter %v: next in %v (%v), want about %v", tc.jitter, d, ok, tc.want)
		}
	}
	// Retried until the next attempt would fall past 24 h, then given up.
	now, n := created, 0
	for {
		next, ok := nextAttempt(created, now, n+1, 0.5, DefaultRetryFor, 0)
		if !ok {
			break
		}
		now, n = next, n+1
	}
	if now.Sub(created) > DefaultRetryFor || now.Sub(created) < DefaultRetryFor-time.Hour || n < 25 || n > 35 {
		t.Fatalf("last retry %v after the event, %d retries; want within the last hour of 24 h, about 30", now.Sub(created), n)
	}
}

func TestParseEndpointURL(t *testing.T) {
	for _, tc := range []struct {
		in, want     string
		allowPrivate bool
		wantErr      string
	}{
		{in: "https://hooks.example.com/petstore?x=1", want: "https://hooks.example.com/petstore?x=1"},
		{in: "HTTP://Hooks.Example.com:8443/a", want: "http://Hooks.Example.com:8443/a"},
		{in: "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/", want: "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/"},
		{in: "http://127.0.0.1:9999/hook", allowPrivate: true, want: "http://127.0.0.1:9999/hook"},
		{in: "http://localhost/hook", allowPrivate: true, want: "http://localhost/hook"},
		{in: "", wantErr: "url is required"},
		{in: "hooks.example.com/x", wantErr: "http:// or https://"},
		{in: "ftp://hooks.example.com/", wantErr: "http:// or https://"},
		{in: "https:///path", wantErr: "no host"},
		{in: "https://user:pw@hooks.example.com/", wantErr: "user name or password"},
		{in: "https://hooks.example.com/#frag", wantErr: "fragment"},
		{in: "https://hooks.example.com:99999/", wantErr: "invalid port"},
		{in: " https://hooks.example.com/", wantErr: "spaces"},
		{in: "https://hooks.example.com/\xff", wantErr: "spaces or invalid characters"},
		{in: "https://hooks.example.com/" + strings.Repeat("a", maxURLLength), wantErr: "longer than"},
		{in: "http://127.0.0.1/", wantErr: "not a public address"},
		{in: "http://[::1]:8080/", wantErr: "not a public address"},
		{in: "http://169.254.169.254/latest/meta-data", wantErr: "not a public address"},
		{in: "http://100.64.1.1/", wantErr: "not a public address"},
		{in: "http://localhost:8080/", wantErr: "localhost"},
		{in: "http://api.localhost/", wantErr: "localhost"},
		{in: "http://intranet/", wantErr: "not a public domain name"},
	} {
		got, err := parseEndpointURL(tc.in, tc.allowPrivate)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "invalid_request") {
				t.Errorf("parseEndpointURL(%q) = %q, %v; want invalid_request saying %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseEndpointURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestAnswerBody(t *testing.T) {
	long := strings.Repeat("a", MaxAnswerBody-1) + "é and more"
	if got := answerBody([]byte(long)); got != strings.Repeat("a", MaxAnswerBody-1) {
		t.Fatalf("answerBody cut a character in half: ends %q", got[len(got)-4:])
	}
	if got := answerBody([]byte("ok \xff")); got != "ok \uFFFD" {
		t.Fatalf("answerBody = %q, want invalid UTF-8 replaced", got)
	}
}

// TestVerifyWebhookRefusesAnEmptySecret: a receiver whose secret is
// empty (an environment variable not set) must not accept a request
// anyone can sign, with an HMAC under the empty key.
func TestVerifyWebhookRefusesAnEmptySecret(t *testing.T) {
	body := []byte(`{"id":"evt_forged","type":"domain.removed"}`)
	forged := Sign("", time.Now(), body)
	if err := VerifyWebhook("", forged, body, time.Minute); !errors.Is(err, ErrEmptySecret) {
		t.Fatalf("VerifyWebhook with an empty secret = %v, want ErrEmptySecret", err)
	}
}
