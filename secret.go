package petstore

import (
	"math"
	"unicode/utf8"
)

// Operator-chosen secrets (the -keys flag, Keys.Ensure) must be at least
// MinSecretLength characters long and carry at least MinSecretBits of
// estimated entropy (SecretBits). Generated keys (GenerateAPIKey) carry 256
// random bits and pass easily.
const (
	MinSecretLength = 20
	MinSecretBits   = 80
)

// SecretBits estimates the entropy of a secret in bits, deliberately
// simply, so an operator can predict it:
//
//	bits = effective length × log2(pool)
//
// The pool is the sum of the sizes of the character classes the secret
// uses: lower-case letters 26, upper-case letters 26, digits 10, other
// printable ASCII 33, anything else 128. The effective length counts the
// characters that differ from the one before by more than one code point,
// so runs and sequences ("aaaa", "abcd", "4321") count once, and is at
// most twice the number of distinct characters, so a pattern repeated
// ("abcabcabc…") counts little. It is not a dictionary check: it refuses
// short, repetitive and single-class secrets, not well-known phrases, so
// operators should still generate secrets (keys create, or
// `openssl rand -base64 32`).
func SecretBits(secret string) float64 {
	var lower, upper, digit, punct, other bool
	distinct := map[rune]bool{}
	effective := 0
	prev := rune(-10)
	for _, r := range secret {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		case r >= 0x20 && r <= 0x7e:
			punct = true
		default:
			other = true
		}
		distinct[r] = true
		if d := r - prev; d > 1 || d < -1 {
			effective++
		}
		prev = r
	}
	pool := 0
	for _, c := range []struct {
		used bool
		size int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {punct, 33}, {other, 128}} {
		if c.used {
			pool += c.size
		}
	}
	if pool == 0 {
		return 0
	}
	effective = min(effective, 2*len(distinct))
	return float64(effective) * math.Log2(float64(pool))
}

// CheckSecretStrength returns an invalid_request error saying what is
// wrong when an operator-chosen secret is shorter than MinSecretLength
// characters or estimated (SecretBits) below MinSecretBits. The message
// never contains the secret.
func CheckSecretStrength(secret string) error {
	if n := utf8.RuneCountInString(secret); n < MinSecretLength {
		return Errorf(CodeInvalidRequest, "key has only %d characters: use at least %d random characters, e.g. from `openssl rand -base64 32`", n, MinSecretLength)
	}
	if bits := SecretBits(secret); bits < MinSecretBits {
		return Errorf(CodeInvalidRequest, "key is too guessable (about %.0f bits estimated, at least %d needed): avoid repeats and sequences and mix letters, digits and symbols, or generate one with `openssl rand -base64 32`", bits, MinSecretBits)
	}
	return nil
}
