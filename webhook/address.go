package webhook

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/netguard"
)

// refusedAddrError is a dial refused because the address is not public.
type refusedAddrError struct{ addr netip.Addr }

func (e *refusedAddrError) Error() string {
	return fmt.Sprintf("refused to connect to %s: not a public address (receivers must be public unless the platform runs with -webhook-allow-private)", e.addr)
}

// dialControl is the net.Dialer Control of deliveries: it runs after the
// name is resolved, on the very address about to be connected to, so a
// name that resolves to a public address when the endpoint is created
// and to a private one later (DNS rebinding) is refused all the same.
func dialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refused to connect to %q: not an IP address and port", address)
	}
	if !netguard.Public(ap.Addr()) {
		return &refusedAddrError{addr: ap.Addr().Unmap()}
	}
	return nil
}

// maxURLLength bounds an endpoint's URL.
const maxURLLength = 2048

// parseEndpointURL checks a receiver's URL and returns it in its
// canonical form: absolute http or https, a host, no user name or
// password (they would be shown on every listing) and no fragment. Unless
// allowPrivate, a host that is an IP literal must be public and
// "localhost" is refused; names are checked again at every connection
// (dialControl).
func parseEndpointURL(raw string, allowPrivate bool) (string, error) {
	bad := func(why string) error {
		return petstore.Errorf(petstore.CodeInvalidRequest, "url %s: give an absolute http or https URL such as https://example.com/webhooks", why)
	}
	if raw == "" {
		return "", petstore.Errorf(petstore.CodeInvalidRequest, "url is required: the address that receives the events, such as https://example.com/webhooks")
	}
	if len(raw) > maxURLLength {
		return "", petstore.Errorf(petstore.CodeInvalidRequest, "url is longer than %d bytes", maxURLLength)
	}
	if !utf8.ValidString(raw) || strings.TrimSpace(raw) != raw || strings.ContainsAny(raw, " \t\r\n") {
		return "", bad("contains spaces or invalid characters")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", bad("is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("must start with http:// or https://")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return "", bad("has no host")
	case u.User != nil:
		return "", bad("must not contain a user name or password")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "", bad("must not contain a fragment (#…)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", bad("has an invalid port")
		}
	}
	if !allowPrivate {
		host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
		if ip, err := netip.ParseAddr(host); err == nil && !netguard.Public(ip) {
			return "", petstore.Errorf(petstore.CodeInvalidRequest, "url points to %s, which is not a public address: receivers must be reachable on the internet", ip)
		}
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			return "", petstore.Errorf(petstore.CodeInvalidRequest, "url points to localhost: receivers must be reachable on the internet")
		}
		if net.ParseIP(host) == nil && !strings.Contains(host, ".") {
			return "", petstore.Errorf(petstore.CodeInvalidRequest, "url host %q is not a public domain name: receivers must be reachable on the internet", host)
		}
	}
	return u.String(), nil
}
