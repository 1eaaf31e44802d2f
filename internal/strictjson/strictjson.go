// Package strictjson reads the JSON bodies of the API's requests more
// strictly than encoding/json: exactly one object, valid UTF-8 throughout,
// and no member name repeated, ignoring case (see Object); NewPet and
// NewOrder decode the creation bodies. It is the pure core of httpx's
// body reading, with no HTTP in it: httpx and its dashboard read every
// request body with it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
)

// Object is the one reader of JSON request bodies, for pets, orders
// and the dashboard: the body must be exactly one JSON object with nothing
// after it, whose strings are all valid UTF-8 and whose member names are
// unique ignoring case (checkText). It returns the object's members,
// undecoded; the operation's decoder reads the ones it knows.
func Object(body []byte) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n") // JSON's whitespace only
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, petstore.Errorf(petstore.CodeInvalidRequest, "body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil {
		return nil, petstore.Errorf(petstore.CodeInvalidRequest, "body is not valid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, petstore.Errorf(petstore.CodeInvalidRequest, "body must contain exactly one JSON object and nothing after it")
	}
	if err := checkText(trimmed); err != nil {
		return nil, err
	}
	return fields, nil
}

// checkText enforces what encoding/json lets through in a body that is
// already known to be one syntactically valid JSON value:
//
//   - Every string, member names and values of unknown, ignored members
//     included, is valid UTF-8 with no unpaired surrogate escape (RFC 8259
//     §8.1, I-JSON RFC 7493 §2.1). encoding/json silently replaces both
//     with U+FFFD, so the raw tokens are checked.
//   - No object has two member names that are equal ignoring case
//     (I-JSON §2.3 asks for unique names). Case matters too because
//     encoding/json, and so many clients and proxies, match names
//     case-insensitively while the pet decoder matches them exactly: a
//     body with "name" and "NAME" means different pets to different
//     readers, so it is refused rather than read one way.
//
// The error is invalid_request and names the top-level member at fault.
func checkText(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		obj     bool
		wantKey bool
		keys    map[string]string // folded name → name as sent
	}
	var stack []*frame
	member := "" // the top-level member being read
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			// io.EOF after the one value; any other error cannot happen
			// for a body the caller decoded, and is refused anyway.
			if len(stack) == 0 && prev > 0 {
				return nil
			}
			return petstore.Errorf(petstore.CodeInvalidRequest, "body is not valid JSON")
		}
		off := dec.InputOffset()
		raw := body[prev:off] // the token and the separators before it
		prev = off
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if s, ok := tok.(string); ok && top != nil && top.obj && top.wantKey {
			if !validText(raw) {
				return petstore.Errorf(petstore.CodeInvalidRequest, "member names must be valid UTF-8")
			}
			if len(stack) == 1 {
				member = s
			}
			folded := Fold(s)
			if first, dup := top.keys[folded]; dup {
				return petstore.Errorf(petstore.CodeInvalidRequest, "member names must be unique, ignoring case: %s repeats %s", Quote(s), Quote(first))
			}
			top.keys[folded] = s
			top.wantKey = false
			continue
		}
		// A value: the next string in its object is a name again.
		if top != nil && top.obj {
			top.wantKey = true
		}
		switch v := tok.(type) {
		case json.Delim:
			stack = append(stack, &frame{obj: v == '{', wantKey: v == '{', keys: map[string]string{}})
		case string:
			if !validText(raw) {
				where := "body"
				if len(stack) > 0 && len(member) <= 64 && utf8.ValidString(member) {
					where = member
				}
				return petstore.Errorf(petstore.CodeInvalidRequest, "%s must be valid UTF-8", where)
			}
		}
	}
}

// Fold is the case-insensitive form of a member name: two names fold
// alike exactly when encoding/json matches them (strings.EqualFold,
// simple Unicode case folding), such as "k" and the Kelvin sign (U+212A),
// but not "i" and the dotless ı (U+0131). Each rune becomes the smallest
// of its folding orbit, which for an ASCII letter is its upper case.
func Fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Map(foldRune, s)
		}
	}
	return strings.ToUpper(s)
}

// foldRune returns the smallest rune that simple case folding equates
// with r.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// Quote quotes a member name for a message, cut to 64 bytes.
func Quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a message is JSON, not HTML
	_ = enc.Encode(s)
	return strings.TrimSpace(b.String())
}

// validText reports whether a raw JSON string token holds only valid
// UTF-8 and no unpaired surrogate escape. encoding/json replaces both with
// U+FFFD while decoding, so the decoded string always looks valid: the
// check has to read the token as the client sent it.
func validText(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+1 >= len(raw) || raw[i+1] != 'u' {
			i++ // a two-byte escape such as \\ or \"; skip its second byte
			continue
		}
		r, ok := hex4(raw, i+2)
		switch {
		case !ok:
			return false
		case r >= 0xDC00 && r <= 0xDFFF:
			return false // a low surrogate with no high one before it
		case r >= 0xD800 && r <= 0xDBFF:
			if i+7 >= len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' {
				return false
			}
			lo, ok := hex4(raw, i+8)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 11 // both escapes
		default:
			i += 5
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape starting at raw[i].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[i : i+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// foldedFields are the NewPet members' names as Fold folds them.
var foldedFields = [...]string{Fold("name"), Fold("categoryId"), Fold("status")}

// NewPet reads a creation body: exactly one JSON object and nothing
// after it. Fields are matched exactly; unknown fields (a client's "id"
// among them) are ignored. Type errors, overflow and null name the field.
// Every string in the body, ignored ones included, must be valid UTF-8,
// and no two member names may be equal ignoring case (Object): a
// body with "name" and "NAME" is 400, never read as either. A member that
// is a field's name in another case ("NAME" alone) is 400 too, since
// case-insensitive readers take it for the field.
//
// It is the only reader of the body: httpx's Idempotency-Key hash is
// made of its result.
func NewPet(body []byte) (petstore.NewPet, error) {
	invalid := func(format string, args ...any) (petstore.NewPet, error) {
		return petstore.NewPet{}, petstore.Errorf(petstore.CodeInvalidRequest, format, args...)
	}
	fields, err := Object(body)
	if err != nil {
		return petstore.NewPet{}, err
	}
	for k := range fields {
		// A member that only case-folds to a field ("NAME", "stAtus") is
		// read as that field by encoding/json and many clients, and
		// ignored here: refused, so no reader sees another pet.
		for i, f := range [...]string{"name", "categoryId", "status"} {
			// foldedFields[i] is Fold(f); a longer name cannot fold to
			// it (folding shrinks a rune at most from 3 bytes to 1).
			if k != f && len(k) <= 3*len(f) && Fold(k) == foldedFields[i] {
				return invalid("member %s must be written %q: member names are case-sensitive", Quote(k), f)
			}
		}
	}
	var np petstore.NewPet
	raw, ok := fields["name"]
	if !ok {
		return invalid("name is required")
	}
	if err := decodeString(raw, &np.Name); err != nil {
		return invalid("name must be a string")
	}
	raw, ok = fields["categoryId"]
	if !ok {
		return invalid("categoryId is required")
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && errors.Is(ne.Err, strconv.ErrRange) {
			return invalid("categoryId must be an integer >= 1 that fits in 64 bits")
		}
		return petstore.NewPet{}, petstore.CategoryIDError()
	}
	np.CategoryID = id
	if raw, ok := fields["status"]; ok {
		// A status that is sent must be one of the three values: "" and
		// null are refused like a null name, not read as "absent", which
		// would give the pet the service's default behind the client's back.
		var s string
		if err := decodeString(raw, &s); err != nil || !petstore.PetStatus(s).Valid() {
			return petstore.NewPet{}, petstore.PetStatusError()
		}
		np.Status = petstore.PetStatus(s)
	}
	return np, nil
}

// decodeString decodes a JSON string, refusing null (which encoding/json
// would accept as "leave unchanged").
func decodeString(raw json.RawMessage, dst *string) error {
	if len(raw) == 0 || raw[0] != '"' {
		return errors.New("not a string")
	}
	return json.Unmarshal(raw, dst)
}

// rfc3339Only reports whether s, which time.Parse took as time.RFC3339,
// is RFC 3339 indeed: Go also takes a comma before the fraction of a
// second and an offset of 24 hours or more, which RFC 3339 (and the
// OpenAPI document's date-time) do not.
func rfc3339Only(s string) bool {
	if strings.ContainsRune(s, ',') {
		return false
	}
	if n := len(s); n >= 6 && (s[n-6] == '+' || s[n-6] == '-') {
		hh, mm := s[n-5:n-3], s[n-2:]
		return hh <= "23" && mm <= "59"
	}
	return true
}

// NewOrder reads an order's creation body with the strictness of
// NewPet (Object: exactly one JSON object and nothing after it,
// valid UTF-8, no member name repeated, ignoring case); fields matched
// exactly, and a field's name in another case alone refused as on pets;
// unknown fields (a client's "id" among them) ignored. A field that is sent must be of
// its type and in range: null, "" and out-of-range numbers are 400 naming
// the field, never read as "absent", which would apply a default behind
// the client's back. petId must be an integer; whether it is >= 1 and
// names an existing pet is the service's check.
func NewOrder(body []byte) (petstore.NewOrder, error) {
	invalid := func(format string, args ...any) (petstore.NewOrder, error) {
		return petstore.NewOrder{}, petstore.Errorf(petstore.CodeInvalidRequest, format, args...)
	}
	fields, err := Object(body)
	if err != nil {
		return petstore.NewOrder{}, err
	}
	for k := range fields {
		for _, f := range [...]string{"petId", "quantity", "shipDate", "status", "complete"} {
			if k != f && strings.EqualFold(k, f) { // encoding/json's match
				return invalid("member %s must be written %q: member names are case-sensitive", Quote(k), f)
			}
		}
	}
	var no petstore.NewOrder
	raw, ok := fields["petId"]
	if !ok {
		return invalid("petId is required")
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return invalid("petId must be an integer >= 1 that fits in 64 bits")
		}
		return invalid("petId must be an integer >= 1")
	}
	no.PetID = id
	if raw, ok := fields["quantity"]; ok {
		n, err := strconv.ParseInt(string(raw), 10, 32)
		if err != nil || n < 1 {
			return invalid("quantity must be an integer from 1 to %d", math.MaxInt32)
		}
		no.Quantity = int32(n)
	}
	if raw, ok := fields["shipDate"]; ok {
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return invalid("shipDate must be an RFC 3339 date-time string")
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil || !rfc3339Only(s) {
			return invalid("shipDate must be an RFC 3339 date-time such as 2026-05-01T12:00:00Z")
		}
		if t.Truncate(time.Microsecond).IsZero() { // kept at microsecond precision
			// The zero instant is how "no ship date" is kept.
			return invalid("shipDate must be later than 0001-01-01T00:00:00Z")
		}
		no.ShipDate = t
	}
	if raw, ok := fields["status"]; ok {
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil || !petstore.OrderStatus(s).Valid() {
			return petstore.NewOrder{}, petstore.OrderStatusError()
		}
		no.Status = petstore.OrderStatus(s)
	}
	if raw, ok := fields["complete"]; ok {
		switch string(raw) {
		case "true":
			no.Complete = true
		case "false":
		default:
			return invalid("complete must be true or false")
		}
	}
	return no, nil
}

// Decode decodes exactly one JSON object from body into v and
// turns every failure into invalid_request with a message a person can act
// on. Unknown fields are ignored, as in /v1, and as in /v1 every string
// must be valid UTF-8 and no object may repeat a member name, ignoring
// case (Object): encoding/json would read {"name":"a","NAME":"b"}
// as "b" where another reader takes "a".
func Decode(body []byte, v any) error {
	if _, err := Object(body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			t := te.Type
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			return petstore.Errorf(petstore.CodeInvalidRequest, "%s must be a %s", te.Field, jsonKind(t.Kind()))
		}
		return petstore.Errorf(petstore.CodeInvalidRequest, "body is not valid JSON")
	}
	return nil
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Int, reflect.Int64:
		return "whole number"
	}
	return k.String()
}
