package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
)

// readObject is the one reader of JSON request bodies, for pets, orders
// and the dashboard: the body must be exactly one JSON object with nothing
// after it, whose strings are all valid UTF-8 and whose member names are
// unique ignoring case (checkJSONText). It returns the object's members,
// undecoded; the operation's decoder reads the ones it knows.
func readObject(body []byte) (map[string]json.RawMessage, error) {
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
	if err := checkJSONText(trimmed); err != nil {
		return nil, err
	}
	return fields, nil
}

// checkJSONText enforces what encoding/json lets through in a body that is
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
func checkJSONText(body []byte) error {
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
			if !validJSONText(raw) {
				return petstore.Errorf(petstore.CodeInvalidRequest, "member names must be valid UTF-8")
			}
			if len(stack) == 1 {
				member = s
			}
			folded := foldName(s)
			if first, dup := top.keys[folded]; dup {
				return petstore.Errorf(petstore.CodeInvalidRequest, "member names must be unique, ignoring case: %s repeats %s", quoteShort(s), quoteShort(first))
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
			if !validJSONText(raw) {
				where := "body"
				if len(stack) > 0 && len(member) <= 64 && utf8.ValidString(member) {
					where = member
				}
				return petstore.Errorf(petstore.CodeInvalidRequest, "%s must be valid UTF-8", where)
			}
		}
	}
}

// foldName is the case-insensitive form of a member name. ToUpper then
// ToLower folds the special cases encoding/json also matches, such as the
// Kelvin sign (U+212A) for "k" and the long s (U+017F) for "s".
func foldName(s string) string { return strings.ToLower(strings.ToUpper(s)) }

// quoteShort quotes a member name for a message, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	b, _ := marshalJSON(s, "")
	return string(bytes.TrimSpace(b))
}

// DecodeObject decodes exactly one JSON object from body into v and
// turns every failure into invalid_request with a message a person can act
// on. Unknown fields are ignored, as in /v1, and as in /v1 every string
// must be valid UTF-8 and no object may repeat a member name, ignoring
// case (checkJSONText): encoding/json would read {"name":"a","NAME":"b"}
// as "b" where another reader takes "a".
func DecodeObject(body []byte, v any) error {
	if _, err := readObject(body); err != nil {
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
