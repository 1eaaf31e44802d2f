package changefeed

import (
	"strconv"
	"strings"

	"github.com/petstorekit/petstore"
)

// PetsID is the ID of a KindPets change, in the form KindPets describes,
// for creates from lowest on whose pets had statuses (none: any status).
func PetsID(lowest int64, statuses []petstore.PetStatus) string {
	s, sep := strconv.FormatInt(lowest, 10), ":"
	for _, st := range statuses {
		s, sep = s+sep+string(st), ","
	}
	return s
}

// ParsePetsID reverses PetsID: an id of 0 for one it cannot read, and no
// statuses (any status) unless every one is valid.
func ParsePetsID(id string) (int64, []petstore.PetStatus) {
	idText, list, _ := strings.Cut(id, ":")
	lowest, err := strconv.ParseInt(idText, 10, 64)
	if err != nil { // out of range too: ParseInt returns its bound then
		return 0, nil
	}
	var statuses []petstore.PetStatus
	for name := range strings.SplitSeq(list, ",") { // "" too: no statuses
		if !petstore.PetStatus(name).Valid() {
			return lowest, nil
		}
		statuses = append(statuses, petstore.PetStatus(name))
	}
	return lowest, statuses
}
