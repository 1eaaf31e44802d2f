package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/keyscli"
)

// DeployStore keeps each project's last successful deploy: the custom
// domain engine accepts a domain only for a project that has one.
// bunstore and memstore implement it; TestDeployStoreContract checks
// both against the rules below.
type DeployStore interface {
	// RecordDeploy stores a successful deploy of projectID at at,
	// replacing the project's earlier one. Returns invalid_request if
	// projectID is empty: a deploy belongs to a project.
	RecordDeploy(ctx context.Context, projectID string, at time.Time) error
	// LastDeploy returns projectID's last successful deploy, or the zero
	// time when it was never deployed.
	LastDeploy(ctx context.Context, projectID string) (time.Time, error)
	// LastDeploys returns every deployed project's last deploy.
	LastDeploys(ctx context.Context) (map[string]time.Time, error)
}

// projectsUsage describes the projects subcommand.
const projectsUsage = `usage:
  projects list                 each project with its plan, keys and last deploy
  projects deploy PROJECT_ID    record a successful deploy of the project
A project exists while it has a key; "keys create -deployed" records a deploy of the new key's project.`

// project is what this example knows of a project: it exists while it
// has keys, and its plan is the highest of its keys' plans.
type project struct {
	ID         string
	Plan       petstore.Plan
	Keys       int
	LastDeploy time.Time
}

// projectList gathers the projects of every stored key, by first key.
func projectList(keys []petstore.APIKey) []*project {
	var out []*project
	byID := map[string]*project{}
	for _, k := range keys {
		p := byID[k.ProjectID]
		if p == nil {
			p = &project{ID: k.ProjectID, Plan: k.Plan}
			byID[k.ProjectID] = p
			out = append(out, p)
		}
		p.Keys++
		if k.Plan.AtLeast(p.Plan) {
			p.Plan = k.Plan
		}
	}
	return out
}

// projectsOf tells the domain engine each project's plan (the highest of
// its keys') and whether it has a successful deploy.
func projectsOf(keys *petstore.Keys, deploys DeployStore) customdomain.Projects {
	return customdomain.ProjectsFunc(func(ctx context.Context, id string) (customdomain.Project, error) {
		all, err := keys.List(ctx)
		if err != nil {
			return customdomain.Project{}, err
		}
		projects := projectList(all)
		i := slices.IndexFunc(projects, func(p *project) bool { return p.ID == id })
		if i < 0 {
			return customdomain.Project{}, petstore.Errorf(petstore.CodeNotFound, "project %s not found", id)
		}
		at, err := deploys.LastDeploy(ctx, id)
		if err != nil {
			return customdomain.Project{}, err
		}
		return customdomain.Project{ID: id, Plan: projects[i].Plan, Deployed: !at.IsZero()}, nil
	})
}

// ensureOperatorKeys stores the -keys keys, as keyscli.Ensure does, and
// counts their projects as deployed: they are the operator's own
// configuration. A project already deployed keeps its deploy time. A
// revoked key stays revoked, which is logged once. Each key's calls wait
// on the database at most timeout (-start-timeout).
func ensureOperatorKeys(ctx context.Context, timeout bound, keys *petstore.Keys, specs []keyscli.Spec, deploys DeployStore, logger *slog.Logger) error {
	for i, s := range specs {
		var k petstore.APIKey
		var stored bool
		if err := startStep(ctx, timeout, 0, func(ctx context.Context) (err error) {
			k, stored, err = keyscli.EnsureOne(ctx, keys, s, i+1, logger)
			return err
		}); err != nil {
			return err
		}
		if !stored {
			continue
		}
		if err := startStep(ctx, timeout, 0, func(ctx context.Context) error {
			return deployedOnce(ctx, deploys, k.ProjectID)
		}); err != nil {
			return err
		}
	}
	return nil
}

// deployedOnce records a deploy of projectID unless it has one.
func deployedOnce(ctx context.Context, deploys DeployStore, projectID string) error {
	at, err := deploys.LastDeploy(ctx, projectID)
	if err == nil && at.IsZero() {
		err = deploys.RecordDeploy(ctx, projectID, time.Now())
	}
	if err != nil {
		return fmt.Errorf("record the deploy of %s: %w", projectID, err)
	}
	return nil
}

// checkProjects refuses a projects command line other than "list" or
// "deploy PROJECT_ID".
func checkProjects(args []string) error {
	usage := func(format string, a ...any) error {
		return usageError{err: fmt.Errorf("projects: "+format, a...), usage: projectsUsage}
	}
	switch {
	case len(args) == 0:
		return usage("missing subcommand")
	case args[0] == "list":
		if len(args) != 1 {
			return usage("list takes no arguments")
		}
	case args[0] == "deploy":
		if len(args) != 2 {
			return usage("deploy takes one project id")
		}
	default:
		return usage("unknown subcommand: use list or deploy")
	}
	return nil
}

// runProjects runs "projects list" or "projects deploy PROJECT_ID".
func runProjects(ctx context.Context, store backend, args []string, w io.Writer) error {
	if err := checkProjects(args); err != nil {
		return err
	}
	all, err := petstore.NewKeys(store).List(ctx)
	if err != nil {
		return err
	}
	projects := projectList(all)
	switch args[0] {
	case "list":
		deploys, err := store.LastDeploys(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PROJECT\tPLAN\tKEYS\tLAST DEPLOY")
		for _, p := range projects {
			last := "never (custom domains need a deploy)"
			if at, ok := deploys[p.ID]; ok {
				last = at.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", p.ID, p.Plan, p.Keys, last)
		}
		return tw.Flush()
	case "deploy":
		id := args[1]
		if !slices.ContainsFunc(projects, func(p *project) bool { return p.ID == id }) {
			// Not quoted: a key's secret pasted here would be printed back.
			return petstore.Errorf(petstore.CodeNotFound, "no project has the id given: no key acts for it (see keys list)")
		}
		now := time.Now().UTC()
		if err := store.RecordDeploy(ctx, id, now); err != nil {
			return err
		}
		fmt.Fprintf(w, "recorded a successful deploy of %s at %s; it may now add custom domains (Pro plan or above)\n", id, now.Format(time.RFC3339))
		return nil
	}
	return nil // checkProjects allows nothing else
}

// createDeployed runs "keys create" with -deployed taken out of args, and
// when it was given, records a deploy of the new key's project. Without
// it a new project starts undeployed. Other keys subcommands pass through.
func createDeployed(ctx context.Context, store backend, args []string, run func(args []string) error) error {
	if len(args) == 0 || args[0] != "create" {
		return run(args)
	}
	rest, deployed := withoutDeployed(args)
	keys := petstore.NewKeys(store)
	before, err := keys.List(ctx)
	if err != nil {
		return err
	}
	if err := run(rest); err != nil || !deployed {
		return err
	}
	after, err := keys.List(ctx)
	if err != nil {
		return err
	}
	for _, k := range after {
		if !slices.ContainsFunc(before, func(b petstore.APIKey) bool { return b.ID == k.ID }) {
			if err := deployedOnce(ctx, store, k.ProjectID); err != nil {
				return err
			}
		}
	}
	return nil
}

// withoutDeployed returns args without this server's -deployed flag, which
// keyscli does not know, and whether it was given.
func withoutDeployed(args []string) (rest []string, deployed bool) {
	rest = args[:0:0]
	for _, a := range args {
		switch a {
		case "-deployed", "--deployed", "-deployed=true", "--deployed=true":
			deployed = true
		case "-deployed=false", "--deployed=false":
			deployed = false
		default:
			rest = append(rest, a)
		}
	}
	return rest, deployed
}

// checkCommand refuses a malformed subcommand before the database is
// opened. The keys subcommands are checked by running them over a store
// that refuses every call, since keyscli checks its arguments before it
// asks the store anything.
func checkCommand(ctx context.Context, cfg config) error {
	switch {
	case len(cfg.command) == 0:
		return nil
	case isAdminCommand(cfg.command):
		return checkAdmin(cfg)
	case cfg.command[0] == "projects":
		return checkProjects(cfg.command[1:])
	case cfg.command[0] == "keys":
		args := cfg.command[1:]
		if len(args) > 0 && args[0] == "create" {
			args, _ = withoutDeployed(args)
		}
		if err := keyscli.Run(ctx, unopenedStore{}, args, io.Discard); errors.Is(err, keyscli.ErrUsage) {
			return err
		}
	}
	return nil
}

// errUnopened is what unopenedStore answers every call with.
var errUnopened = errors.New("the database is not opened to check a command line")

// unopenedStore is the key store checkCommand runs keyscli over.
type unopenedStore struct{}

func (unopenedStore) CreateKey(context.Context, petstore.APIKey, string) error { return errUnopened }
func (unopenedStore) UpsertKey(context.Context, petstore.APIKey, string) (petstore.APIKey, error) {
	return petstore.APIKey{}, errUnopened
}
func (unopenedStore) KeyByHash(context.Context, string) (petstore.APIKey, string, error) {
	return petstore.APIKey{}, "", errUnopened
}
func (unopenedStore) ListKeys(context.Context) ([]petstore.APIKey, error) { return nil, errUnopened }
func (unopenedStore) SetKeyPlan(context.Context, string, petstore.Plan, petstore.Limits) (petstore.APIKey, error) {
	return petstore.APIKey{}, errUnopened
}
func (unopenedStore) DeleteKey(context.Context, string) error { return errUnopened }
func (unopenedStore) RevokedKey(context.Context, string) (petstore.APIKey, error) {
	return petstore.APIKey{}, errUnopened
}
func (unopenedStore) UnrevokeKey(context.Context, string) (petstore.APIKey, error) {
	return petstore.APIKey{}, errUnopened
}
