package httpx

import (
	"cmp"
	"net/url"
	"strconv"

	"github.com/petstorekit/petstore"
)

// parsePageQuery reads a list's query string (GET /pets, GET
// /store/orders): its limit (0: not given), cursor and status, if given.
// Stricter than the spec: a query that does not parse (such as "limit=%"
// or a ";" separator), a limit outside 1..100, an empty cursor or a
// repeated parameter is 400, never silently ignored as URL.Query would.
func parsePageQuery(raw string) (limit int, cursor string, status []string, err error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return 0, "", nil, petstore.Errorf(petstore.CodeInvalidRequest, "the query string is malformed: use name=value pairs joined by & with valid percent-escapes")
	}
	for _, name := range []string{"limit", "status", "cursor"} {
		if len(q[name]) > 1 {
			return 0, "", nil, petstore.Errorf(petstore.CodeInvalidRequest, "%s must be given at most once", name)
		}
	}
	if v := q["limit"]; len(v) == 1 {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > petstore.MaxLimit || v[0][0] == '+' {
			return 0, "", nil, petstore.Errorf(petstore.CodeInvalidRequest, "limit must be an integer from 1 to 100")
		}
		limit = n
	}
	if v := q["cursor"]; len(v) == 1 && v[0] == "" {
		return 0, "", nil, petstore.Errorf(petstore.CodeInvalidRequest, "cursor must not be empty; omit it for the first page")
	}
	return limit, q.Get("cursor"), q["status"], nil
}

// parseListQuery reads GET /pets's query: see parsePageQuery; a status
// must be one of the pets' three, exactly as written.
func parseListQuery(raw string) (f petstore.PetFilter, err error) {
	var status []string
	if f.Limit, f.Cursor, status, err = parsePageQuery(raw); err == nil && status != nil {
		f.Status, err = petstore.ParsePetStatus(status[0])
	}
	return f, err
}

// parseOrderListQuery reads GET /store/orders's query with the same rules
// as GET /pets's; a status must be one of the orders' three.
func parseOrderListQuery(raw string) (f petstore.OrderFilter, err error) {
	var status []string
	if f.Limit, f.Cursor, status, err = parsePageQuery(raw); err == nil && status != nil {
		f.Status, err = petstore.ParseOrderStatus(status[0])
	}
	return f, err
}

// nextLink is the Link header of a page that has a next one, ""
// otherwise. Its parameters are sorted, as url.Values.Encode sorts them,
// and need no escaping: a cursor is base64url, a status one word.
func nextLink(path, cursor string, limit int, status string) string {
	if cursor == "" {
		return ""
	}
	link := "<" + path + "?cursor=" + cursor + "&limit=" + strconv.Itoa(cmp.Or(limit, petstore.DefaultLimit))
	if status != "" {
		link += "&status=" + status
	}
	return link + `>; rel="next"`
}

// parsePathID reads the int64 id in a path (petId, orderId): anything
// else is 400 naming it; any integer, even <= 0, is the service's to find.
func parsePathID(name, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || s[0] == '+' {
		return 0, petstore.Errorf(petstore.CodeInvalidRequest, "%s must be a 64-bit integer", name)
	}
	return id, nil
}

func parsePetID(s string) (int64, error)   { return parsePathID("petId", s) }
func parseOrderID(s string) (int64, error) { return parsePathID("orderId", s) }
