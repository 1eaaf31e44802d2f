package httpx

import (
	"net/http"
	"strconv"

	"github.com/petstorekit/petstore"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// listPets answers GET /pets: one page, and a Link to the next.
func (a *api) listPets(w http.ResponseWriter, r *http.Request) error {
	f, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	key := a.petsPath + "?" + string(f.Status) + "&" + strconv.Itoa(f.Limit) + "&" + f.Cursor
	return serveEncoded(w, r, a.Cache, key, func() (*encoded, error) {
		page, err := a.Service.ListPets(r.Context(), f)
		if err != nil {
			return nil, err
		}
		if page.Pets == nil {
			page.Pets = []petstore.Pet{}
		}
		e, err := encode(page.Pets, nextLink(a.petsPath, page.NextCursor, f.Limit, string(f.Status)))
		if err == nil {
			e.page, e.status = true, f.Status
			if n := len(page.Pets); n > 0 {
				e.lastID = page.Pets[n-1].ID
			}
		}
		return e, err
	})
}

// createPet is the operation: create, respond, nothing a replay lacks.
func (a *api) createPet(w http.ResponseWriter, r *http.Request, np petstore.NewPet) {
	pet, err := a.Service.CreatePet(r.Context(), np)
	afterCommit(r.Context(), func() { a.Cache.created(pet, err) })
	var e *encoded
	if err == nil {
		if e, err = encode(pet, ""); err == nil {
			w.Header().Set("Location", a.petsPath+"/"+itoa(pet.ID))
			writeEncoded(w, r, http.StatusCreated, e)
			return
		}
	}
	WriteError(w, r, err)
}

// getPet answers the deprecated GET /pets/{petId}; every answer, errors
// included, carries the deprecation headers.
func (a *api) getPet(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Deprecation", a.deprecation[0])
	h.Set("Sunset", a.deprecation[1])
	h.Set("Link", a.deprecation[2])
	id, err := parsePetID(r.PathValue("petId"))
	if err != nil {
		return err
	}
	return serveEncoded(w, r, a.Cache, a.petsPath+"/"+itoa(id), func() (*encoded, error) {
		pet, err := a.Service.GetPet(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return encode(pet, "")
	})
}
