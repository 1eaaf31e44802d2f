package httpx

import "github.com/petstorekit/petstore/internal/strictjson"

// DecodeObject decodes exactly one JSON object from body into v by the
// /v1 API's rules (unknown fields ignored, valid UTF-8, no member name
// repeated ignoring case), turning every failure into invalid_request
// with a message a person can act on.
func DecodeObject(body []byte, v any) error { return strictjson.Decode(body, v) }
