package httpx

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/strictjson"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// handleListPets answers GET /pets: one page, and a Link to the next.
func (a *api) handleListPets(w http.ResponseWriter, r *http.Request) {
	f, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	key := a.petsPath + "?" + string(f.Status) + "&" + strconv.Itoa(f.Limit) + "&" + f.Cursor
	serveEncoded(w, r, a.cache, key, func() (*encoded, error) {
		page, err := a.svc.ListPets(r.Context(), f)
		if err != nil {
			return nil, err
		}
		if page.Pets == nil {
			page.Pets = []petstore.Pet{}
		}
		return encode(page.Pets, nextLink(a.petsPath, page.NextCursor, f.Limit, string(f.Status)))
	})
}

// handleCreatePet answers POST /pets: it decodes the body, once, and
// hands the NewPet to a.create, which is createPet itself or, with
// Config.Idempotency, the Idempotency-Key wrapper around it. The wrapper
// hashes exactly the NewPet the operation creates, so a request's
// identity cannot differ from what it does.
func (a *api) handleCreatePet(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		WriteError(w, r, petstore.Errorf(petstore.CodeInvalidRequest, "could not read the body"))
		return
	}
	np, err := decodeNewPet(body)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	a.create.serve(w, r, np)
}

// decodedHandler answers a creation (POST /pets, POST /store/orders)
// whose body was decoded to a T: the operation itself, or the
// Idempotency-Key wrapper around it, which hashes exactly that T.
type decodedHandler[T any] interface {
	serve(w http.ResponseWriter, r *http.Request, v T)
}

// createPet is the operation: create, respond. It is kept to that, so a
// wrapper can replay its stored response.
type createPet struct{ a *api }

func (c createPet) serve(w http.ResponseWriter, r *http.Request, np petstore.NewPet) {
	pet, err := c.a.svc.CreatePet(r.Context(), np)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	c.a.cache.created(r.Context(), pet.ID)
	e, err := encode(pet, "")
	if err != nil {
		WriteError(w, r, err)
		return
	}
	w.Header().Set("Location", c.a.base+"/pets/"+itoa(pet.ID))
	writeEncoded(w, r, http.StatusCreated, e)
}

// handleGetPet answers the deprecated GET /pets/{petId}; every answer,
// errors included, carries the deprecation headers.
func (a *api) handleGetPet(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Deprecation", a.deprecation)
	h.Set("Sunset", Sunset.Format(http.TimeFormat))
	h.Set("Link", "<"+a.petsPath+`>; rel="successor-version"`)
	id, err := parsePetID(r.PathValue("petId"))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	serveEncoded(w, r, a.cache, a.petsPath+"/"+itoa(id), func() (*encoded, error) {
		pet, err := a.svc.GetPet(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return encode(pet, "")
	})
}

// handleOpenAPI serves the OpenAPI document with this mount's base path.
func (a *api) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	ServeDocument(w, r, a.openapi, a.openapiETag)
}

// foldedFields are the NewPet members' names as strictjson.Fold folds them.
var foldedFields = [...]string{strictjson.Fold("name"), strictjson.Fold("categoryId"), strictjson.Fold("status")}

// decodeNewPet reads a creation body: exactly one JSON object and nothing
// after it. Fields are matched exactly; unknown fields (a client's "id"
// among them) are ignored. Type errors, overflow and null name the field.
// Every string in the body, ignored ones included, must be valid UTF-8,
// and no two member names may be equal ignoring case (strictjson.Object): a
// body with "name" and "NAME" is 400, never read as either. A member that
// is a field's name in another case ("NAME" alone) is 400 too, since
// case-insensitive readers take it for the field.
//
// It is the only reader of the body: the Idempotency-Key hash is made of
// its result.
func decodeNewPet(body []byte) (petstore.NewPet, error) {
	invalid := func(format string, args ...any) (petstore.NewPet, error) {
		return petstore.NewPet{}, petstore.Errorf(petstore.CodeInvalidRequest, format, args...)
	}
	fields, err := strictjson.Object(body)
	if err != nil {
		return petstore.NewPet{}, err
	}
	for k := range fields {
		// A member that only case-folds to a field ("NAME", "stAtus") is
		// read as that field by encoding/json and many clients, and
		// ignored here: refused, so no reader sees another pet.
		for i, f := range [...]string{"name", "categoryId", "status"} {
			// foldedFields[i] is strictjson.Fold(f); a longer name cannot fold to
			// it (folding shrinks a rune at most from 3 bytes to 1).
			if k != f && len(k) <= 3*len(f) && strictjson.Fold(k) == foldedFields[i] {
				return invalid("member %s must be written %q: member names are case-sensitive", strictjson.Quote(k), f)
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
