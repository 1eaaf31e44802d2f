package client

import (
	"net/url"
	"testing"
)

// FuzzNextCursor: the cursor read from a page's next link, which the
// server sends, is the link's own and never the cursor of the page just
// read: a caller paging by cursor (List, ListOrders) would read that
// page forever. A next link without one is an error, not the last page.
func FuzzNextCursor(f *testing.F) {
	f.Add("https://api.example.com/v1/pets?cursor=b", "https://api.example.com/v1/pets?cursor=a")
	f.Add("https://api.example.com/v1/pets?cursor=a&limit=5", "https://api.example.com/v1/pets?cursor=a")
	f.Add("https://api.example.com/v1/pets?limit=5&cursor=a", "https://api.example.com/v1/pets?cursor=a&limit=5")
	f.Add("https://api.example.com/v1/pets?cursor=%zz&cursor=b", "https://api.example.com/v1/pets")
	f.Add("https://api.example.com/v1/pets?cursor=", "https://api.example.com/v1/pets")
	f.Add("", "https://api.example.com/v1/pets")
	f.Fuzz(func(t *testing.T, nextRaw, atRaw string) {
		at, err := url.Parse(atRaw)
		if err != nil {
			t.Skip()
		}
		var next *url.URL
		if nextRaw != "" {
			if next, err = url.Parse(nextRaw); err != nil {
				t.Skip()
			}
		}
		cursor, err := nextCursor(next, at)
		if err != nil {
			if cursor != "" {
				t.Fatalf("nextCursor(%q, %q) = %q with error %v", nextRaw, atRaw, cursor, err)
			}
			return
		}
		if next == nil {
			if cursor != "" {
				t.Fatalf("nextCursor(nil, %q) = %q", atRaw, cursor)
			}
			return
		}
		q, _ := url.ParseQuery(next.RawQuery)
		atQuery, _ := url.ParseQuery(at.RawQuery)
		if cursor == "" || cursor != q.Get("cursor") {
			t.Fatalf("nextCursor(%q, %q) = %q, not the link's cursor", nextRaw, atRaw, cursor)
		}
		if cursor == atQuery.Get("cursor") {
			t.Fatalf("nextCursor(%q, %q) = %q, the cursor of the page just read", nextRaw, atRaw, cursor)
		}
	})
}
