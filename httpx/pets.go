package httpx

import (
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
	np, err := strictjson.NewPet(body)
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
