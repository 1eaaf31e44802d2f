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
