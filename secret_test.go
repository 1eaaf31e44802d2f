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
		{"psk_Alpha3kW9xQ2mT7vB4n", true},
		{"Kx9#mP2vL7qR4tW8zN3b", true}, // 20 random characters
		{"a", false},
		{"Kx9#mP2vL7qR4tW8zN3", false},        // 19 characters
		{strings.Repeat("a", 64), false},      // one character repeated
		{strings.Repeat("Ab1!", 16), false},   // a pattern repeated
		{"abcdefghijklmnopqrstuvwxyz", false}, // a sequence
		{"01234567890123456789", false},       // digits in order
		{"password1234567890ab", false},       // a word and a sequence
		{"ZYXWVUTSRQPONMLKJIHGFEDCBA", false}, // a sequence backwards
		{"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5\xf4\xf3\xf2\xf1\xf0\xef\xee\xed\xec", false}, // invalid UTF-8 is one rune repeated
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
