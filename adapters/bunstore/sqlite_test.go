package bunstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
)

// TestOpenSQLitePaths checks that the file is created at exactly the path
// given, whatever characters it holds, and that its data survives a
// reopen, as a server's does across restarts.
func TestOpenSQLitePaths(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"petstore.db", "with space.db", "100%.db", "ünï 🐈.db", "file:x.db"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			var id int64
			for round := range 2 {
				db, err := bunstore.OpenSQLite(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := bunstore.Migrate(ctx, db); err != nil {
					t.Fatal(err)
				}
				s := bunstore.New(db)
				if round == 0 {
					p, err := s.CreatePet(ctx, petstore.NewPet{Name: "kept", CategoryID: 1})
					if err != nil {
						t.Fatal(err)
					}
					id = p.ID
				} else if p, err := s.GetPet(ctx, id); err != nil || p.Name != "kept" {
					t.Fatalf("after reopening: %+v, %v", p, err)
				}
				_ = db.Close()
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("database file not at %q: %v", path, err)
			}
		})
	}
}

func TestOpenSQLiteRejects(t *testing.T) {
	for _, path := range []string{"", "a.db?mode=ro", "a.db#x"} {
		if db, err := bunstore.OpenSQLite(path); err == nil {
			_ = db.Close()
			t.Errorf("OpenSQLite(%q) succeeded, want an error", path)
		}
	}
}
