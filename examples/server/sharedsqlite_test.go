package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServersSharingSQLiteSeeEachOthersPets runs two servers on one SQLite
// file, as two processes sharing it would, each answering unchanged reads
// from the encoded answers it keeps. A pet created on either is in the
// very next page and fetch of the server that created it, and in the
// other's within 100 ms (bunstore's WatchChanges), however often each has
// just read the same page.
func TestServersSharingSQLiteSeeEachOthersPets(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	a, printed, _ := startStoppable(t, []string{"-addr", "127.0.0.1:0", "-db", db}, nil)
	m := demoKeyRE.FindStringSubmatch(strings.Join(printed, "\n"))
	if m == nil {
		t.Fatalf("no demo key printed on first start:\n%s", strings.Join(printed, "\n"))
	}
	key := m[1]
	b, _, _ := startStoppable(t, []string{"-addr", "127.0.0.1:0", "-db", db}, nil)

	lastID := func(base string) int64 {
		t.Helper()
		status, _, body := call(t, "GET", base+"/v1/pets?limit=100", key, "", "")
		if status != 200 {
			t.Fatalf("list on %s: %d %s", base, status, body)
		}
		var pets []struct{ ID int64 }
		if err := json.Unmarshal([]byte(body), &pets); err != nil {
			t.Fatal(err)
		}
		if len(pets) == 0 {
			return 0
		}
		return pets[len(pets)-1].ID
	}
	servers := []string{a, b}
	for i := range 6 {
		for _, s := range servers {
			lastID(s) // read twice: the second read can come from memory
			lastID(s)
		}
		on := servers[i%2]
		status, hdr, body := call(t, "POST", on+"/v1/pets", key, "", fmt.Sprintf(`{"name":"pet %d","categoryId":1}`, i))
		if status != 201 {
			t.Fatalf("create on %s: %d %s", on, status, body)
		}
		var created struct{ ID int64 }
		if err := json.Unmarshal([]byte(body), &created); err != nil {
			t.Fatal(err)
		}
		if got := lastID(on); got != created.ID {
			t.Fatalf("round %d: pet %d was created on %s; its next page there ends with pet %d", i, created.ID, on, got)
		}
		other := servers[(i+1)%2]
		start := time.Now()
		for lastID(other) != created.ID {
			if time.Since(start) > 100*time.Millisecond {
				t.Fatalf("round %d: pet %d was created on %s; %s's page still ends before it after 100 ms", i, created.ID, on, other)
			}
			time.Sleep(time.Millisecond)
		}
		for _, s := range servers {
			if status, _, body := call(t, "GET", s+hdr.Get("Location"), key, "", ""); status != 200 {
				t.Fatalf("round %d: GET %s on %s: %d %s", i, hdr.Get("Location"), s, status, body)
			}
		}
	}
}
