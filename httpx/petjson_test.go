package httpx

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/petstorekit/petstore"
)

// encodingJSON is what encoding/json writes for v with HTML escaping off,
// the reference the hand-written pet encoder must match byte for byte.
func encodingJSON(t testing.TB, v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestWritePetsMatchesEncodingJSON(t *testing.T) {
	pets := []petstore.Pet{
		{ID: 1, Name: "Rex", CategoryID: 1, Status: petstore.StatusAvailable},
		{ID: -9223372036854775808, Name: "", CategoryID: 9223372036854775807},
		{ID: 3, Name: "a>b & <c> \"q\" \\ \n\r\t\b\f\x00\x1f\x7f é 日本 \u2028\u2029 \xff\xfe end", CategoryID: 2, Status: petstore.StatusSold},
	}
	for _, tc := range []struct {
		name string
		pets []petstore.Pet
	}{{"none", []petstore.Pet{}}, {"one", pets[:1]}, {"all", pets}} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			writePets(w, httptest.NewRequest("GET", "/", nil), 200, tc.pets)
			if got, want := w.Body.String(), encodingJSON(t, tc.pets); got != want {
				t.Fatalf("body\n got %q\nwant %q", got, want)
			}
			// net/http counts a body this small (TestHead over a real
			// connection); a header of the handler's own would cost a
			// header-map entry on every answer.
			if got := w.Header().Get("Content-Length"); got != "" {
				t.Fatalf("Content-Length %s set for a %d-byte body", got, w.Body.Len())
			}
		})
	}
	// A body larger than net/http's buffer carries its length, so that
	// it is not chunked.
	many := make([]petstore.Pet, 100)
	for i := range many {
		many[i] = petstore.Pet{ID: int64(i + 1), Name: "a pet with a longer name", CategoryID: 1}
	}
	w := httptest.NewRecorder()
	writePets(w, httptest.NewRequest("GET", "/", nil), 200, many)
	if w.Body.Len() <= autoLengthMax || w.Header().Get("Content-Length") != itoa(int64(w.Body.Len())) {
		t.Fatalf("Content-Length %q for a %d-byte body", w.Header().Get("Content-Length"), w.Body.Len())
	}
	w = httptest.NewRecorder()
	writePet(w, httptest.NewRequest("GET", "/", nil), 201, pets[2])
	if got, want := w.Body.String(), encodingJSON(t, pets[2]); got != want || w.Code != 201 {
		t.Fatalf("writePet: %d %q, want 201 %q", w.Code, got, want)
	}
}

func FuzzAppendPetJSON(f *testing.F) {
	for _, s := range []string{"Rex", "a>b", "\u2028", "\xff", "\"\\\x00", "日本\t"} {
		f.Add(int64(1), s, int64(2), "available")
	}
	f.Fuzz(func(t *testing.T, id int64, name string, cat int64, status string) {
		p := petstore.Pet{ID: id, Name: name, CategoryID: cat, Status: petstore.PetStatus(status)}
		got := string(appendPetJSON(nil, &p)) + "\n"
		if want := encodingJSON(t, p); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
