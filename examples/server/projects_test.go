package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Deploys are real: a project made by "keys create" cannot add a custom
// domain (409 deploy_required) until "projects deploy" records a deploy,
// or it was created with -deployed; -keys projects count as deployed, and
// "projects list" shows each project's plan and last deploy.
func TestProjectsDeploy(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "deploys.db")
	create := func(args ...string) (secret, project string) {
		t.Helper()
		out, err := runCmd(t, append([]string{"-db", db, "keys", "create", "-plan", "pro"}, args...)...)
		s := regexp.MustCompile(`key:\s+(psk_\S+)`).FindStringSubmatch(out)
		p := regexp.MustCompile(`project:\s+(prj_\S+)`).FindStringSubmatch(out)
		if err != nil || s == nil || p == nil {
			t.Fatalf("keys create %v: %v\n%s", args, err, out)
		}
		return s[1], p[1]
	}
	fresh, freshProject := create()
	ready, readyProject := create("-deployed")

	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", db, "-keys", opKey + ":pro"}, nil)
	add := func(key, name string) (int, string) {
		t.Helper()
		status, _, body := call(t, "POST", base+"/dashboard/api/domains", key, "", `{"name":"`+name+`"}`)
		return status, body
	}
	if status, body := add(fresh, "fresh.example.com"); status != 409 || !strings.Contains(body, "deploy_required") || !strings.Contains(body, "deploy") {
		t.Fatalf("undeployed project: %d %s", status, body)
	}
	if status, body := add(ready, "ready.example.com"); status != 201 {
		t.Fatalf("project created -deployed: %d %s", status, body)
	}
	if status, body := add(opKey, "op.example.com"); status != 201 {
		t.Fatalf("-keys project: %d %s", status, body)
	}

	out, err := runCmd(t, "-db", db, "projects", "list")
	if err != nil {
		t.Fatalf("projects list: %v\n%s", err, out)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	if l := lines[freshProject]; !strings.Contains(l, "pro") || !strings.Contains(l, "never") {
		t.Fatalf("undeployed project listed as %q in:\n%s", l, out)
	}
	if l := lines[readyProject]; !strings.Contains(l, "pro") || !regexp.MustCompile(`\d{4}-\d\d-\d\dT`).MatchString(l) {
		t.Fatalf("deployed project listed as %q in:\n%s", l, out)
	}
	if len(lines) != 4 { // the header and three projects
		t.Fatalf("projects list:\n%s", out)
	}

	if out, err := runCmd(t, "-db", db, "projects", "deploy", freshProject); err != nil || !strings.Contains(out, freshProject) {
		t.Fatalf("projects deploy: %v\n%s", err, out)
	}
	if status, body := add(fresh, "fresh.example.com"); status != 201 {
		t.Fatalf("after projects deploy: %d %s", status, body)
	}
	if out, err := runCmd(t, "-db", db, "projects", "list"); err != nil || strings.Contains(out, "never") {
		t.Fatalf("projects list after deploy: %v\n%s", err, out)
	}

	for _, args := range [][]string{{"deploy", "prj_nope"}, {"deploy"}, {"launch"}, {}} {
		if out, err := runCmd(t, append([]string{"-db", db, "projects"}, args...)...); err == nil {
			t.Fatalf("projects %v accepted:\n%s", args, out)
		}
	}
}

// The demo key's project counts as deployed: it can add a domain at once.
func TestDemoProjectIsDeployed(t *testing.T) {
	base, printed := start(t, []string{"-addr", "127.0.0.1:0"}, nil)
	m := demoKeyRE.FindStringSubmatch(strings.Join(printed, "\n"))
	if m == nil {
		t.Fatalf("no demo key in:\n%s", strings.Join(printed, "\n"))
	}
	if status, _, body := call(t, "POST", base+"/dashboard/api/domains", m[1], "", `{"name":"demo.example.com"}`); status != 201 {
		t.Fatalf("demo project: %d %s", status, body)
	}
}

// opKey is an operator's -keys key: its project counts as deployed.
const opKey = "psk_operator_Hm6wT2qZx9Vb4Kr8Ls3J"
