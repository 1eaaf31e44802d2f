package petstore

import "github.com/google/uuid"

// NewKeyID returns a new public key identifier ("key_" and a UUID v7, so
// ids sort by creation time). It is not secret.
func NewKeyID() string { return KeyIDPrefix + uuid.Must(uuid.NewV7()).String() }

// KeyIDPrefix begins every key id NewKeyID makes.
const KeyIDPrefix = "key_"

// NewProjectID returns a new project identifier ("prj_" and a UUID v7).
func NewProjectID() string { return "prj_" + uuid.Must(uuid.NewV7()).String() }
