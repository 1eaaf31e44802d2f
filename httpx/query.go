package httpx

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/petstorekit/petstore"
)

// pageQuery is what a list's query string says: its limit, status and
// cursor, each present at most once. Status is left as text for the
// caller, whose resource has its own statuses.
type pageQuery struct {
	limit     int // 0: not given
	status    string
	hasStatus bool
	cursor    string
}

// parsePageQuery reads the query string of a list (GET /pets, GET
// /store/orders) with one set of rules. It is stricter than the spec,
// which lists no error for GET /pets: a query that does not parse (a bad
// percent escape such as "limit=%" or "1%ZZ", or a ";" separator, which
// url.ParseQuery refuses too), a limit that is not an integer from 1 to
// 100, an empty cursor, or a repeated parameter is 400 rather than
// silently ignored; URL.Query would drop the pairs it cannot parse and
// turn "?status=sold&limit=1%ZZ" into the default limit. Other parameters
// are ignored, but must parse too.
//
// It scans the raw query in place: a plain query allocates nothing, where
// url.ParseQuery built a map of slices for every request.
func parsePageQuery(raw string) (pageQuery, error) {
	var q pageQuery
	var limit string
	var nLimit, nStatus, nCursor int
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if strings.Contains(pair, ";") {
			return q, errMalformedQuery()
		}
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k) // returns k itself when there is nothing to unescape
		if err != nil {
			return q, errMalformedQuery()
		}
		if v, err = url.QueryUnescape(v); err != nil {
			return q, errMalformedQuery()
		}
		switch k {
		case "limit":
			limit, nLimit = v, nLimit+1
		case "status":
			q.status, q.hasStatus, nStatus = v, true, nStatus+1
		case "cursor":
			q.cursor, nCursor = v, nCursor+1
		}
	}
	for _, p := range []struct {
		name string
		n    int
	}{{"limit", nLimit}, {"status", nStatus}, {"cursor", nCursor}} {
		if p.n > 1 {
			return q, petstore.Errorf(petstore.CodeInvalidRequest, "%s must be given at most once", p.name)
		}
	}
	if nLimit == 1 {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > petstore.MaxLimit || limit[0] == '+' {
			return q, petstore.Errorf(petstore.CodeInvalidRequest, "limit must be an integer from 1 to 100")
		}
		q.limit = n
	}
	if nCursor == 1 && q.cursor == "" {
		return q, petstore.Errorf(petstore.CodeInvalidRequest, "cursor must not be empty; omit it for the first page")
	}
	return q, nil
}

func errMalformedQuery() error {
	return petstore.Errorf(petstore.CodeInvalidRequest, "the query string is malformed: use name=value pairs joined by & with valid percent-escapes")
}

// parseListQuery reads GET /pets's query: see parsePageQuery; a status
// must be one of the pets' three, exactly as written.
func parseListQuery(raw string) (petstore.PetFilter, error) {
	q, err := parsePageQuery(raw)
	if err != nil {
		return petstore.PetFilter{}, err
	}
	f := petstore.PetFilter{Limit: q.limit, Cursor: q.cursor}
	if q.hasStatus {
		if f.Status, err = petstore.ParsePetStatus(q.status); err != nil {
			return petstore.PetFilter{}, err
		}
	}
	return f, nil
}

// parseOrderListQuery reads GET /store/orders's query with the same rules
// as GET /pets's; a status must be one of the orders' three.
func parseOrderListQuery(raw string) (petstore.OrderFilter, error) {
	q, err := parsePageQuery(raw)
	if err != nil {
		return petstore.OrderFilter{}, err
	}
	f := petstore.OrderFilter{Limit: q.limit, Cursor: q.cursor}
	if q.hasStatus {
		if f.Status, err = petstore.ParseOrderStatus(q.status); err != nil {
			return petstore.OrderFilter{}, err
		}
	}
	return f, nil
}

// nextLink is the Link header of a page that has a next one, ""
// otherwise: path?cursor=…&limit=…[&status=…] with rel="next". Exposing it
// to cross-origin scripts is the job of the operator's CORS middleware,
// whose Access-Control-Expose-Headers this leaves alone. The parameters
// are sorted, as url.Values.Encode sorts them, and need no escaping: a
// cursor is base64url, a status one word.
func nextLink(path, cursor string, limit int, status string) string {
	if cursor == "" {
		return ""
	}
	if limit == 0 {
		limit = petstore.DefaultLimit
	}
	link := "<" + path + "?cursor=" + cursor + "&limit=" + strconv.Itoa(limit)
	if status != "" {
		link += "&status=" + status
	}
	return link + `>; rel="next"`
}

// parsePathID reads the decimal int64 id in a path (petId, orderId). A
// non-integer or an id outside int64 is 400 naming the parameter (an
// extension of the spec); any integer, even <= 0, is left for the service
// to report as not found.
func parsePathID(name, s string) (int64, error) {
	if s == "" || s[0] == '+' {
		return 0, petstore.Errorf(petstore.CodeInvalidRequest, "%s must be a 64-bit integer", name)
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, petstore.Errorf(petstore.CodeInvalidRequest, "%s must be a 64-bit integer", name)
	}
	return id, nil
}

func parsePetID(s string) (int64, error)   { return parsePathID("petId", s) }
func parseOrderID(s string) (int64, error) { return parsePathID("orderId", s) }
