package petstore_test

import (
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
)

func TestCheckSecretStrength(t *testing.T) {
	tests := []struct {
		secret string
		ok     bool
	}{
		{petstore.GenerateAPIKey(), true},
		{"psk_Alpha3kW9xQ2mT7vB4nZrE", true},                    // 22 base64 characters after the prefix
		{"9f86d081884c7d659a2feaa0c55ad015", true},              // `openssl rand -hex 16`
		{"3q2+7wAAAAAAAAAAAAAAAA/xKzRt1vQ0Y7mX2cG4bH8=", false}, // a run of six
		{"3q2+7wZrAb9kLm1XyQ0Pw/xKzRt1vQ0Y7mX2cG4bH8=", true},   // `openssl rand -base64 32`
		{"88291649174250385021747291649103857261047", true},     // 41 random digits
		{"9f86d081884c7d659a2feaa0c55ad01", false},              // 31 hex digits: 124 bits
		{"psk_Alpha3kW9xQ2mT7vB4n", false},                      // 19 characters: 113 bits
		{"qwertyuiopasdfghjklzxcvbnm", false},                   // issue 26: a keyboard row
		{"correcthorsebatterystaple", false},                    // issue 26: words
		{"mypetstoreapikey2026prod", false},                     // issue 26: words and a year
		{"Kx9#mP2vL7qR4tW8zN3bYq7", false},                      // '#' is in no documented alphabet
		{"a", false},
		{strings.Repeat("a", 64), false},                                                            // one character repeated
		{strings.Repeat("Ab1-", 16), false},                                                         // a pattern repeated
		{"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", false},                                             // a sequence
		{"ZYXWVUTSRQPONMLKJIHGFEDCBA9x8y7z6w", false},                                               // a sequence backwards
		{"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5\xf4\xf3\xf2\xf1\xf0\xef\xee\xed\xec", false}, // not ASCII
	}
	for _, tt := range tests {
		err := petstore.CheckSecretStrength(tt.secret)
		if (err == nil) != tt.ok {
			t.Errorf("CheckSecretStrength(%q) = %v (%.0f bits), want ok %v", tt.secret, err, petstore.SecretBits(tt.secret), tt.ok)
		}
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Errorf("%q: code %q", tt.secret, petstore.ErrorCode(err))
			}
			if len(tt.secret) > 3 && strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error %q shows the secret", err)
			}
		}
	}
}

// TestGeneratedKeysAlwaysPass: the server's own keys are never refused by
// the rule operators' keys are held to.
func TestGeneratedKeysAlwaysPass(t *testing.T) {
	for range 2000 {
		if k := petstore.GenerateAPIKey(); petstore.CheckSecretStrength(k) != nil {
			t.Fatalf("generated key refused: %.0f bits", petstore.SecretBits(k))
		}
	}
}
