package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/petstorekit/petstore/internal/testenv"
)

// TestOperatorCommandsDoNotEchoASecret: an operator who pastes a key's
// secret where "keys usage" or "bans lift" want its id sees it neither
// printed back nor sent to the running server, whose access log has
// every request's path.
func TestOperatorCommandsDoNotEchoASecret(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.Error(w, `{"code":"not_found","message":"not found"}`, http.StatusNotFound)
	}))
	defer admin.Close()
	redisURL := testenv.RedisURL(t)
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "leak")
	db := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
	for _, where := range [][]string{
		{"-admin-addr", admin.Listener.Addr().String()},
		{"-db", db, "-redis", redisURL, "-redis-prefix", prefix},
	} {
		for _, cmd := range [][]string{{"keys", "usage"}, {"bans", "lift"}} {
			args := append(append(append([]string{}, where...), cmd...), plantedKey)
			out, err := runErr(args...)
			if err == nil {
				t.Errorf("%v: no error, want one saying an id is wanted", args)
			} else {
				noSecret(t, strings.Join(cmd, " ")+"'s error", err.Error())
			}
			noSecret(t, strings.Join(cmd, " ")+"'s output", out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	noSecret(t, "the paths sent to the admin endpoint", strings.Join(paths, "\n"))
}

// TestProjectsDeployDoesNotEchoASecret: a key's secret pasted where
// "projects deploy" wants a project id is not printed back.
func TestProjectsDeployDoesNotEchoASecret(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
	out, err := runErr("-db", db, "projects", "deploy", plantedKey)
	if err == nil {
		t.Fatalf("projects deploy of no project: no error\n%s", out)
	}
	noSecret(t, "projects deploy's error", err.Error())
	noSecret(t, "projects deploy's output", out)
}

// TestMalformedOperatorCommandDoesNotEchoASecret: an operator command
// with an argument too many, a key's secret among them, is refused
// without printing its arguments back.
func TestMalformedOperatorCommandDoesNotEchoASecret(t *testing.T) {
	for _, cmd := range [][]string{{"bans", "list", plantedKey}, {"keys", "usage", "key_x", plantedKey}, {"bans", "lift", "192.0.2.7", plantedKey}} {
		args := append([]string{"-admin-addr", "127.0.0.1:1"}, cmd...)
		out, err := runErr(args...)
		if err == nil {
			t.Fatalf("%v: no error", cmd[:2])
		}
		noSecret(t, strings.Join(cmd[:2], " ")+"'s error", err.Error())
		noSecret(t, strings.Join(cmd[:2], " ")+"'s output", out)
	}
}
