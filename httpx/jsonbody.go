package httpx

import (
	"encoding/json"
	"errors"
	"reflect"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/strictjson"
)

// DecodeObject decodes exactly one JSON object from body into v and
// turns every failure into invalid_request with a message a person can act
// on. Unknown fields are ignored, as in /v1, and as in /v1 every string
// must be valid UTF-8 and no object may repeat a member name, ignoring
// case (strictjson.Object): encoding/json would read {"name":"a","NAME":"b"}
// as "b" where another reader takes "a".
func DecodeObject(body []byte, v any) error {
	if _, err := strictjson.Object(body); err != nil {
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
