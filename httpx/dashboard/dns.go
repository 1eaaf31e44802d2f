package dashboard

import (
	"context"
	"net/http"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx"
)

// DNSConfigurer is implemented by a DomainEngine that can write a domain's
// records at the DNS the platform manages (*customdomain.Engine does, when its
// EngineConfig.DNS is set). The dashboard offers "Configure DNS for me"
// through it; with an engine that lacks it the operation is
// invalid_request.
type DNSConfigurer interface {
	ConfigureDNS(ctx context.Context, projectID, name string) ([]customdomain.Finding, error)
}

var _ DNSConfigurer = (*customdomain.Engine)(nil)

// dnsConfigured is the body of POST <base>/api/domains/{name}/dns.
type dnsConfigured struct {
	Findings []customdomain.Finding `json:"findings"`
	Domain   customdomain.Domain    `json:"domain"`
}

// handleConfigureDNS writes the domain's records at the platform's DNS
// and, when nothing stood in the way, verifies the domain at once.
func (d *dashboard) handleConfigureDNS(w http.ResponseWriter, r *http.Request, key petstore.APIKey, name string) error {
	c, ok := d.engine.(DNSConfigurer)
	if !ok {
		return petstore.Errorf(petstore.CodeInvalidRequest, "this platform does not manage DNS; create the records at your DNS provider")
	}
	findings, err := c.ConfigureDNS(r.Context(), key.ProjectID, name)
	if err != nil {
		return err
	}
	var dm customdomain.Domain
	if len(findings) == 0 {
		dm, err = d.engine.Verify(r.Context(), key.ProjectID, name)
	} else {
		dm, err = d.engine.Get(r.Context(), key.ProjectID, name)
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, dnsConfigured{Findings: orEmpty(findings), Domain: tidyDomain(dm)})
	return nil
}
