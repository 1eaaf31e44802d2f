package petstore

import (
	"math"
	"strings"
)

// MinSecretBits is the least an operator-chosen secret (the -keys flag,
// Keys.Ensure) must carry, as SecretBits counts: 128 random bits written
// in one of the alphabets that tools print random bytes in (hex, base64
// or base64url, with or without the "psk_" prefix and "=" padding), as
// `openssl rand -hex 16`, `openssl rand -base64 32` and GenerateAPIKey
// (256 bits) make them. A secret a person made up does not pass.
const MinSecretBits = 128

// SecretBits counts the bits a secret can carry when it was drawn at
// random from the alphabet it is written in, deliberately simply, so an
// operator can predict it:
//
//	bits = length × log2(alphabet)
//
// The "psk_" prefix and trailing "=" padding are not counted. The
// alphabet is the smallest one the rest fits in: digits 10, hex digits of
// one case 16, otherwise the sum of the classes used (lower-case letters
// 26, upper-case letters 26, digits 10, the two symbols of base64 or
// base64url 2). So a word or phrase, in lower case letters only, counts
// 4.7 bits a letter: "correcthorsebatterystaple" counts 117.5 bits and is refused.
//
// A secret that no random draw in those alphabets would plausibly give
// counts less: one with a character outside them (spaces, other
// punctuation, non-ASCII) counts 0, and so does a run of six characters
// that repeat or step by one in one direction ("aaaaaa", "abcdef",
// "654321"; a 32-digit random hex key has one once in 13,000 draws); the
// length counted is at most four per distinct character, so a pattern
// repeated ("Ab1-Ab1-…") counts little. It is not a dictionary check: a
// long enough phrase in mixed case passes, so operators should still
// generate their secrets (keys create, or the openssl commands above).
func SecretBits(secret string) float64 {
	s := strings.TrimRight(strings.TrimPrefix(secret, APIKeyPrefix), "=")
	var lower, upper, digit, symbol, hexLower, hexUpper bool
	distinct := map[byte]bool{}
	run, step := 1, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
			hexUpper = hexUpper || c > 'f'
		case c >= 'A' && c <= 'Z':
			upper = true
			hexLower = hexLower || c > 'F'
		case c >= '0' && c <= '9':
			digit = true
		case c == '-' || c == '_' || c == '+' || c == '/':
			symbol = true
		default:
			return 0
		}
		distinct[c] = true
		if i > 0 {
			d := int(c) - int(s[i-1])
			switch {
			case d < -1 || d > 1:
				run = 1
			case run > 1 && d == step:
				run++
			default:
				run = 2
			}
			step = d
			if run >= 6 {
				return 0
			}
		}
	}
	if len(s) == 0 {
		return 0
	}
	// hexLower is set by a non-hex upper-case letter; hexUpper by a
	// non-hex lower-case one: then the secret is not hex of that case.
	isHex := !symbol && ((lower && !upper && !hexUpper) || (upper && !lower && !hexLower))
	pool := 0
	switch {
	case digit && !lower && !upper && !symbol:
		pool = 10
	case isHex:
		pool = 16
	default:
		for _, c := range []struct {
			used bool
			size int
		}{{lower, 26}, {upper, 26}, {digit, 10}, {symbol, 2}} {
			if c.used {
				pool += c.size
			}
		}
	}
	return float64(min(len(s), 4*len(distinct))) * math.Log2(float64(pool))
}

// CheckSecretStrength returns an invalid_request error saying what is
// wrong when an operator-chosen secret is estimated (SecretBits) below
// MinSecretBits. The message never contains the secret.
func CheckSecretStrength(secret string) error {
	if bits := SecretBits(secret); bits < MinSecretBits {
		return Errorf(CodeInvalidRequest, "key is too guessable (%.0f bits counted, at least %d needed): use a generated key (`keys create`) "+
			"or at least 128 random bits written in hex or base64, e.g. from `openssl rand -hex 16` or `openssl rand -base64 32`", bits, MinSecretBits)
	}
	return nil
}
