package customdomain_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/customdomain"
)

// Example shows the whole flow: a platform builds the engine, a customer
// adds a domain, creates the record the dashboard shows, clicks Verify,
// and the edge routes the name to the project.
func Example() {
	ctx := context.Background()

	// The customer's DNS: a real DNS server on 127.0.0.1 for example.com.
	zone := memzone.New()
	zone.AddZone("example.com.")
	srv, err := zone.Serve("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	engine, err := customdomain.New(customdomain.EngineConfig{
		Store: memstore.New(),
		Projects: customdomain.ProjectsFunc(func(_ context.Context, id string) (customdomain.Project, error) {
			return customdomain.Project{ID: id, Plan: petstore.PlanPro, Deployed: true}, nil
		}),
		Resolver:    dnsresolver.New(srv.Addr()),
		CNAMETarget: "edge.petstore.localhost",
		EdgeIPs:     []netip.Addr{netip.MustParseAddr("127.0.0.1")},
	})
	if err != nil {
		panic(err)
	}

	d, _, err := engine.Add(ctx, "prj_demo", "Shop.Example.com")
	if err != nil {
		panic(err)
	}
	r := d.Records[0]
	fmt.Printf("%s is %s: create %s %s -> %s (TTL %d)\n", d.Name, d.Status, r.Type, r.Name, r.Value, r.TTL)

	// The customer creates the record.
	if _, err := zone.AppendRecords(ctx, "example.com.", []libdns.Record{
		libdns.CNAME{Name: r.Name, TTL: time.Hour, Target: r.Value + "."},
	}); err != nil {
		panic(err)
	}

	d, err = engine.Verify(ctx, "prj_demo", "shop.example.com")
	if err != nil {
		panic(err)
	}
	fmt.Println("after Verify:", d.Status)

	route := engine.Route("SHOP.example.com:8080")
	fmt.Println("route:", route.Kind == customdomain.RouteServe, route.ProjectID)

	if err := engine.Remove(ctx, "prj_demo", "shop.example.com"); err != nil {
		panic(err)
	}
	fmt.Println("after Remove:", engine.Route("shop.example.com").Kind == customdomain.RouteNone)
	// Output:
	// shop.example.com is pending: create CNAME shop -> edge.petstore.localhost (TTL 3600)
	// after Verify: active
	// route: true prj_demo
	// after Remove: true
}

// Step is the whole lifecycle: a pure function the engine applies inside
// its one write loop, whose effects it runs after the write.
func ExampleStep() {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p := customdomain.Policy{Window: 48 * time.Hour, Issuer: true, Recheck: time.Hour, Grace: 72 * time.Hour}
	e := customdomain.Entry{Name: "shop.example.com", Status: customdomain.StatusPending, PendingSince: now}
	show := func(e customdomain.Entry, fx []customdomain.Effect) {
		var kinds []string
		for _, f := range fx {
			if f.Kind == customdomain.Emit {
				kinds = append(kinds, f.Event)
			} else {
				kinds = append(kinds, fmt.Sprint(f.Kind))
			}
		}
		fmt.Println(e.Status, kinds)
	}
	ok := customdomain.CheckResult{OK: true}
	e, fx := customdomain.Step(e, customdomain.Checked{DNS: ok, Cert: customdomain.CertStatus{State: customdomain.CertNone}, Manual: true}, now, p)
	show(e, fx)
	e, fx = customdomain.Step(e, customdomain.CertReported{Cert: customdomain.CertStatus{State: customdomain.CertIssued}}, now, p)
	show(e, fx)
	moved := customdomain.CheckResult{Observed: customdomain.Observed{CNAME: "elsewhere.example.net"}}
	e, fx = customdomain.Step(e, customdomain.Checked{DNS: moved}, now.Add(time.Hour), p)
	show(e, fx)
	e, fx = customdomain.Step(e, customdomain.Checked{DNS: moved}, now.Add(73*time.Hour), p)
	show(e, fx)
	// Output:
	// issuing [domain.verified Reroute RequestCert]
	// active [domain.certificate.issued Reroute domain.active]
	// misconfigured [Reroute domain.misconfigured]
	// released [Unroute RemoveCert UnconfigureDNS domain.removed]
}
