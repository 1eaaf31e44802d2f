package petstore

import (
	"strings"
	"unicode/utf8"
)

// The longest strings every store keeps, in bytes of UTF-8 (not
// characters: a column of N characters holds more bytes of accented
// text). A store refuses a longer value with invalid_request and stores
// nothing, never cutting it short, so that two values differing past the
// limit never name one record; a lookup by one finds nothing. An
// Idempotency-Key's limit is MaxIdempotencyKeyLength. storetest checks
// them at and past each limit.
const (
	// MaxKeyIDBytes bounds APIKey.ID (generated ids take 40).
	MaxKeyIDBytes = 64
	// MaxProjectIDBytes bounds APIKey.ProjectID and every other project
	// id a store keeps: an order's, a custom domain's and a domain
	// config's (generated ids take 40).
	MaxProjectIDBytes = 255
	// MaxPlanBytes bounds APIKey.Plan, known or not (the longest known,
	// "enterprise", takes 10).
	MaxPlanBytes = 16
	// MaxScopeBytes bounds IdempotencyRecord.Scope (httpx writes the API
	// key's id).
	MaxScopeBytes = 128
	// MaxRequestHashBytes bounds IdempotencyRecord.RequestHash (httpx
	// writes 64 hex digits).
	MaxRequestHashBytes = 1024
	// MaxContentTypeBytes bounds IdempotencyRecord.ContentType.
	MaxContentTypeBytes = 255
	// MaxLocationBytes bounds IdempotencyRecord.Location.
	MaxLocationBytes = 2048
	// MaxBlobKeyBytes bounds a blob's key and a blob lock's name
	// (adapters/acme/blobs), which may hold any bytes.
	MaxBlobKeyBytes = 1024
	// MaxLockOwnerBytes bounds a blob lock's owner.
	MaxLockOwnerBytes = 255
	// MaxDomainIDBytes bounds a custom domain entry's id (generated ids
	// take 40).
	MaxDomainIDBytes = 64
	// MaxDomainNameBytes bounds a custom domain's name (a DNS name takes
	// 253 at most).
	MaxDomainNameBytes = 255
	// MaxDomainStatusBytes bounds a custom domain entry's status (the
	// longest, "misconfigured", takes 13).
	MaxDomainStatusBytes = 16
	// MaxWebhookIDBytes bounds a webhook endpoint's id and a webhook
	// event's id (webhook.Endpoint.ID, webhook.Event.ID; generated ids
	// take 39 and 40).
	MaxWebhookIDBytes = 64
	// MaxWebhookEventTypeBytes bounds a webhook event's type
	// (webhook.Event.Type; the longest, "domain.certificate.failed",
	// takes 25).
	MaxWebhookEventTypeBytes = 64
	// MaxWebhookSecretBytes bounds a webhook endpoint's secret and
	// previous secret (generated secrets take 49).
	MaxWebhookSecretBytes = 255
	// MaxOwnershipTokenBytes bounds a custom domain entry's token and
	// its ownership token, which a new entry of the name may take from
	// it (generated tokens take 38).
	MaxOwnershipTokenBytes = 64
)

// CheckLength refuses, with invalid_request, a value s longer than max
// bytes (one of the Max constants), naming it by what. Stores call it
// before they write a value kept as bytes.
func CheckLength(what, s string, max int) error {
	if len(s) > max {
		return Errorf(CodeInvalidRequest, "%s is longer than %d bytes", what, max)
	}
	return nil
}

// CheckText is CheckLength for a value kept as text, which must also be
// Storable.
func CheckText(what, s string, max int) error {
	if !Storable(s) {
		return Errorf(CodeInvalidRequest, "%s must be UTF-8 without NUL bytes", what)
	}
	return CheckLength(what, s, max)
}

// Storable reports whether s is UTF-8 without a NUL byte, which
// PostgreSQL's text cannot hold: every store refuses any other string,
// so that all refuse the same.
func Storable(s string) bool { return utf8.ValidString(s) && !strings.Contains(s, "\x00") }

// CheckStorable refuses, with invalid_request, a key whose id, project or
// plan is longer than a store keeps (MaxKeyIDBytes, MaxProjectIDBytes,
// MaxPlanBytes) or not Storable. Stores call it before they write.
func (k APIKey) CheckStorable() error {
	switch {
	case !Storable(k.ID) || !Storable(k.ProjectID):
		return Errorf(CodeInvalidRequest, "key id and project id must be UTF-8 without NUL bytes")
	case len(k.ID) > MaxKeyIDBytes:
		return Errorf(CodeInvalidRequest, "key id is longer than %d bytes", MaxKeyIDBytes)
	case len(k.ProjectID) > MaxProjectIDBytes:
		return Errorf(CodeInvalidRequest, "key project id is longer than %d bytes", MaxProjectIDBytes)
	}
	return k.Plan.CheckStorable()
}

// CheckStorable refuses, with invalid_request, a plan, known or not,
// longer than a store keeps (MaxPlanBytes) or not Storable. Stores call
// it (or APIKey.CheckStorable) before they write a key's plan.
func (p Plan) CheckStorable() error { return CheckText("key plan", string(p), MaxPlanBytes) }

// CheckStorable refuses, with invalid_request, a record whose scope, key,
// request hash, content type or location is longer than a store keeps
// (MaxScopeBytes, MaxIdempotencyKeyLength, MaxRequestHashBytes,
// MaxContentTypeBytes, MaxLocationBytes) or not Storable. Stores call it
// before they look up or claim a key, and on the record create returns
// before they keep it: a response they cannot keep is not kept, and the
// call fails with this error.
func (r IdempotencyRecord) CheckStorable() error {
	switch {
	case !Storable(r.Scope) || !Storable(r.Key) || !Storable(r.RequestHash):
		return Errorf(CodeInvalidRequest, "idempotency scope, key and request hash must be UTF-8 without NUL bytes")
	case len(r.Scope) > MaxScopeBytes:
		return Errorf(CodeInvalidRequest, "idempotency scope is longer than %d bytes", MaxScopeBytes)
	case len(r.Key) > MaxIdempotencyKeyLength:
		return Errorf(CodeInvalidRequest, "Idempotency-Key is longer than %d bytes", MaxIdempotencyKeyLength)
	case len(r.RequestHash) > MaxRequestHashBytes:
		return Errorf(CodeInvalidRequest, "idempotency request hash is longer than %d bytes", MaxRequestHashBytes)
	}
	if err := CheckText("idempotency response content type", r.ContentType, MaxContentTypeBytes); err != nil {
		return err
	}
	return CheckText("idempotency response location", r.Location, MaxLocationBytes)
}
