package memstore

import (
	"strings"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
)

// The longest strings the stores keep, in bytes, as storetest's contract
// sets them (storetest.MaxKeyIDBytes and its siblings): memory has no
// columns, but a program tried on memstore and run on bunstore must meet
// the same refusals, invalid_request past a limit.
const (
	maxKeyIDBytes       = 64
	maxProjectIDBytes   = 255
	maxScopeBytes       = 128
	maxRequestHashBytes = 1024
)

// storable reports whether s is UTF-8 without a NUL byte, which
// PostgreSQL's text cannot hold, so that every store refuses the same.
func storable(s string) bool { return utf8.ValidString(s) && !strings.Contains(s, "\x00") }

// checkKey refuses a key with an id or a project too long to store, or
// not storable.
func checkKey(key petstore.APIKey) error {
	switch {
	case !storable(key.ID) || !storable(key.ProjectID):
		return petstore.Errorf(petstore.CodeInvalidRequest, "key id and project id must be UTF-8 without NUL bytes")
	case len(key.ID) > maxKeyIDBytes:
		return petstore.Errorf(petstore.CodeInvalidRequest, "key id is longer than %d bytes", maxKeyIDBytes)
	case len(key.ProjectID) > maxProjectIDBytes:
		return petstore.Errorf(petstore.CodeInvalidRequest, "key project id is longer than %d bytes", maxProjectIDBytes)
	}
	return nil
}

// checkIdempotency refuses a record whose scope, key or request hash is
// too long to store, or not storable.
func checkIdempotency(rec petstore.IdempotencyRecord) error {
	switch {
	case !storable(rec.Scope) || !storable(rec.Key) || !storable(rec.RequestHash):
		return petstore.Errorf(petstore.CodeInvalidRequest, "idempotency scope, key and request hash must be UTF-8 without NUL bytes")
	case len(rec.Scope) > maxScopeBytes:
		return petstore.Errorf(petstore.CodeInvalidRequest, "idempotency scope is longer than %d bytes", maxScopeBytes)
	case len(rec.Key) > petstore.MaxIdempotencyKeyLength:
		return petstore.Errorf(petstore.CodeInvalidRequest, "Idempotency-Key is longer than %d bytes", petstore.MaxIdempotencyKeyLength)
	case len(rec.RequestHash) > maxRequestHashBytes:
		return petstore.Errorf(petstore.CodeInvalidRequest, "idempotency request hash is longer than %d bytes", maxRequestHashBytes)
	}
	return nil
}
