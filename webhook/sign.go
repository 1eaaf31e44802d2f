package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that carries a delivery's signature.
const SignatureHeader = "Petstore-Signature"

// The errors VerifyWebhook returns. Each is safe to log: none holds the
// secret, the signature or the body.
var (
	// ErrInvalidHeader: the header is not "t=<unix seconds>,v1=<hex>…".
	ErrInvalidHeader = errors.New("webhook: malformed Petstore-Signature header")
	// ErrNoValidSignature: no v1 signature in the header matches the body
	// under the secret.
	ErrNoValidSignature = errors.New("webhook: no signature matches the body")
	// ErrTimestampOutOfTolerance: the signature is older (or further in
	// the future) than the tolerance allows, as a replayed request is.
	ErrTimestampOutOfTolerance = errors.New("webhook: signature timestamp outside the tolerance")
	// ErrEmptySecret: the secret to check with is empty (a setting not
	// made), under which anyone can sign a request.
	ErrEmptySecret = errors.New("webhook: the secret to verify with is empty")
)

// maxHeaderLength bounds the header VerifyWebhook parses. A real one is
// about 80 bytes; a few signatures (during a secret rotation) fit easily.
const maxHeaderLength = 4096

// Sign returns the Petstore-Signature header value of body sent at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under secret>",
// the scheme Stripe uses. Each attempt of a delivery is signed again at
// its own time.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// signature is the Petstore-Signature header of an attempt to e made at
// at: signed with e's secret and, while the secret it replaced is valid
// (at before PreviousSecretExpiresAt), with that one too, the new first,
// as Stripe signs during a roll. A receiver accepts it whichever of the
// two it checks with.
func (e Endpoint) signature(at time.Time, body []byte) string {
	h := Sign(e.Secret, at, body)
	if e.PreviousSecret != "" && at.Before(e.PreviousSecretExpiresAt) {
		h += ",v1=" + hex.EncodeToString(mac(e.PreviousSecret, strconv.FormatInt(at.Unix(), 10), body))
	}
	return h
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifyWebhook checks a delivery received from a petstore: header is its
// Petstore-Signature, body its raw request body (read it whole before
// decoding it), secret the endpoint's secret shown when it was created.
// It returns nil when one of the header's v1 signatures is the
// HMAC-SHA256 of "<t>.<body>" under secret and t is within tolerance of
// now (a tolerance of 0 or less means 5 minutes); otherwise
// ErrInvalidHeader, ErrNoValidSignature or ErrTimestampOutOfTolerance,
// and ErrEmptySecret for an empty secret, whatever the header.
// Signatures are compared in constant time. Deduplicate deliveries by the
// event's id: a retried event keeps it.
func VerifyWebhook(secret, header string, body []byte, tolerance time.Duration) error {
	return verifyAt(secret, header, body, tolerance, time.Now())
}

// DefaultTolerance is the tolerance VerifyWebhook applies when given none.
const DefaultTolerance = 5 * time.Minute

func verifyAt(secret, header string, body []byte, tolerance time.Duration, now time.Time) error {
	if secret == "" {
		return ErrEmptySecret
	}
	ts, sigs, err := parseSignature(header)
	if err != nil {
		return err
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	want := mac(secret, strconv.FormatInt(ts, 10), body)
	ok := false
	for _, s := range sigs {
		// Every candidate is compared, so the time taken does not say
		// which one matched.
		if hmac.Equal(s, want) {
			ok = true
		}
	}
	if !ok {
		return ErrNoValidSignature
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrTimestampOutOfTolerance
	}
	return nil
}

// parseSignature reads "t=<unix seconds>,v1=<hex>[,v1=<hex>…]": exactly
// one t, a decimal number of seconds, and at least one v1 of 64 hex
// digits. Items of other schemes (v0, a future v2) are skipped, so that
// receivers keep working when a scheme is added.
func parseSignature(header string) (ts int64, sigs [][]byte, err error) {
	if len(header) > maxHeaderLength {
		return 0, nil, ErrInvalidHeader
	}
	seenT := false
	for item := range strings.SplitSeq(header, ",") {
		k, v, found := strings.Cut(strings.TrimSpace(item), "=")
		if !found {
			return 0, nil, ErrInvalidHeader
		}
		switch k {
		case "t":
			if seenT || v == "" || len(v) > 19 || strings.Trim(v, "0123456789") != "" {
				return 0, nil, ErrInvalidHeader
			}
			if ts, err = strconv.ParseInt(v, 10, 64); err != nil {
				return 0, nil, ErrInvalidHeader
			}
			seenT = true
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return 0, nil, ErrInvalidHeader
			}
			sigs = append(sigs, b)
		}
	}
	if !seenT || len(sigs) == 0 {
		return 0, nil, ErrInvalidHeader
	}
	return ts, sigs, nil
}
