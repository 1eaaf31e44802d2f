package petstore

import "github.com/google/uuid"

// NewKeyID returns a new public key identifier ("key_" and a UUID v7, so
// ids sort by creation time). It is not secret.
func NewKeyID() string { return "key_" + uuid.Must(uuid.NewV7()).String() }

// NewProjectID returns a new project identifier ("prj_" and a UUID v7).
func NewProjectID() string { return "prj_" + uuid.Must(uuid.NewV7()).String() }
