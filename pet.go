package petstore

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// PetStatus is a pet's availability. The spec allows exactly three values.
type PetStatus string

// The three values of PetStatus.
const (
	StatusAvailable PetStatus = "available"
	StatusPending   PetStatus = "pending"
	StatusSold      PetStatus = "sold"
)

// PetStatuses lists the valid statuses in their documented order.
func PetStatuses() []PetStatus { return []PetStatus{StatusAvailable, StatusPending, StatusSold} }

// Valid reports whether s is one of the three statuses. The empty status is
// not valid; a pet without a status simply has none.
func (s PetStatus) Valid() bool {
	switch s {
	case StatusAvailable, StatusPending, StatusSold:
		return true
	}
	return false
}

// ParsePetStatus parses an exact, lower-case status. Anything else is an
// invalid_request error naming the accepted values.
func ParsePetStatus(s string) (PetStatus, error) {
	if st := PetStatus(s); st.Valid() {
		return st, nil
	}
	return "", PetStatusError()
}

// Pet is an animal in the catalogue. ID is assigned by the store on
// creation. Status is omitted from JSON when the pet has none.
type Pet struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	CategoryID int64     `json:"categoryId"`
	Status     PetStatus `json:"status,omitempty"`
}

// PetNotFound is the not_found error for a pet id no stored pet has,
// which every store and the Service return alike.
func PetNotFound(id int64) *Error { return Errorf(CodeNotFound, "pet %d not found", id) }

// NewPet is the body of a creation: the fields a client may set.
// Validate checks it; Service.CreatePet calls Validate before storing.
type NewPet struct {
	Name       string    `json:"name" validate:"petname"`
	CategoryID int64     `json:"categoryId" validate:"gte=1"`
	Status     PetStatus `json:"status,omitempty" validate:"omitempty,petstatus"`
}

// PetFilter selects a page of pets. Limit is 1..100 (0 means DefaultLimit),
// Status filters when set, and Cursor continues after a previous page's
// NextCursor.
type PetFilter struct {
	Limit  int
	Status PetStatus
	Cursor string
}

// Page size bounds of ListPets, from the spec.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// PetPage is one page of a list: pets in ascending id order and the cursor
// of the next page, empty on the last page.
type PetPage struct {
	Pets       []Pet
	NextCursor string
}

// PetQuery is what a PetStore lists: at most Limit pets with an id greater
// than AfterID, in ascending id order, with Status when it is set.
type PetQuery struct {
	Status  PetStatus
	AfterID int64
	Limit   int
}

// cursorPrefix versions the cursor so its format can change without
// breaking clients that hold an old one: an unknown version is rejected.
const cursorPrefix = "v1:"

// EncodeCursor returns the opaque cursor that continues after lastID. It
// carries no secret: any process decodes it the same way.
func EncodeCursor(lastID int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(lastID, 10)))
}

// DecodeCursor returns the last id a cursor continues after. A malformed
// cursor is an invalid_request error. Only the exact text EncodeCursor
// makes is accepted: base64 decoders skip line breaks, so "djE6MQ\n" would
// otherwise decode to the cursor of "djE6MQ".
func DecodeCursor(cursor string) (int64, error) {
	bad := Errorf(CodeInvalidRequest, "cursor is malformed; use the cursor of a previous page's next link")
	raw, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil || len(cursor) > 64 {
		return 0, bad
	}
	s, ok := strings.CutPrefix(string(raw), cursorPrefix)
	if !ok {
		return 0, bad
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 || EncodeCursor(id) != cursor {
		return 0, bad
	}
	return id, nil
}
