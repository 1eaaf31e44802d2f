package httpx

import "github.com/petstorekit/petstore/internal/strictjson"

// DecodeObject decodes exactly one JSON object from body into v by the
// /v1 API's rules (strictjson.Decode); any failure is invalid_request.
func DecodeObject(body []byte, v any) error { return strictjson.Decode(body, v) }
