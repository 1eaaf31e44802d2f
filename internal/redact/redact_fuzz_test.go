package redact

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzURL: what URL shows of scheme://USER:PASSWORD@HOST?QUERY does not
// depend on the password, whatever it holds but a "?" (which starts the
// query); and the password url.Parse finds is shown no more often than
// it occurs in the string with PASSWORD replaced by Mask (unless it is
// part of Mask).
func FuzzURL(f *testing.F) {
	f.Add("postgres", "app", "s3cr/t+==", "db:5432/petstore", "sslmode=disable")
	f.Add("redis", "", "pw@with@at", "cache:6379/0", "password=x")
	f.Add("rfc2136", "hmac-sha256.key", "abc:def", "ns1.example.com:53", "zone=example.com&token=%zz")
	f.Add("mysql", "u", "", "tcp(db:3306)/x", "")
	f.Fuzz(func(t *testing.T, scheme, user, pass, host, query string) {
		if strings.ContainsAny(scheme+user, ":@?") || strings.Contains(scheme, "/") || strings.ContainsAny(pass, "?") || strings.ContainsAny(host, "@?") {
			t.Skip()
		}
		build := func(p string) string {
			s := scheme + "://" + user + ":" + p + "@" + host
			if query != "" {
				s += "?" + query
			}
			return s
		}
		got, other := URL(build(pass)), URL(build("other"+pass+"secret"))
		if got != other {
			t.Fatalf("URL(%q) = %q shows something of the password: with another it is %q", build(pass), got, other)
		}
		s := build(pass)
		if u, err := url.Parse(s); err == nil {
			masked := strings.Replace(s, ":"+pass+"@", ":"+Mask+"@", 1)
			if p, ok := u.User.Password(); ok && !strings.Contains(Mask, p) && strings.Count(URL(s), p) > strings.Count(masked, p) {
				t.Fatalf("URL(%q) = %q shows the password %q", s, URL(s), p)
			}
		}
	})
}

// FuzzKeys: a -keys list is shown item for item as Mask and, at most, the
// known plan the item ends with: nothing else of it, so no part of a
// secret.
func FuzzKeys(f *testing.F) {
	for _, s := range []string{
		"", "k:free", "psk_abc:pro, 0123456789abcdef0123456789abcdef:enterprise:60/100000", "a:enterprise:1/x", "::,,:", "k:PRO", " , k:business ",
		"s:enterprise:1/2:enterprise:3/4", "secret", "x:pro:free",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Keys(s)
		if strings.TrimSpace(s) == "" {
			if got != s {
				t.Fatalf("Keys(%q) = %q", s, got)
			}
			return
		}
		in, out := strings.Split(s, ","), strings.Split(got, ",")
		if len(in) != len(out) {
			t.Fatalf("Keys(%q) = %q: %d items, not %d", s, got, len(out), len(in))
		}
		for i, o := range out {
			if strings.TrimSpace(in[i]) == "" {
				if o != in[i] {
					t.Fatalf("Keys(%q) = %q changed the empty item %d", s, got, i)
				}
				continue
			}
			plan, ok := strings.CutPrefix(o, Mask)
			if !ok || !strings.HasSuffix(in[i], plan) || (plan != "" && plan != ":free" && plan != ":pro" && plan != ":business" && !strings.HasPrefix(plan, ":enterprise:")) {
				t.Fatalf("Keys(%q) = %q shows %q of item %q", s, got, o, in[i])
			}
		}
	})
}
