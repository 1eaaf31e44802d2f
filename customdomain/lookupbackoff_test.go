package customdomain_test

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/petstorekit/petstore/customdomain"
)

// TestActiveDomainWhoseLookupsKeepFailingIsCheckedLessOften: the
// nameservers of an active domain answer SERVFAIL for a day (its zone was
// deleted at its DNS provider, which still holds the delegation). "Could
// not check" is never drift: the domain stays active and served. It is
// checked again a minute after the first failure, then less often while
// the failures last, never less often than the hourly re-check: not every
// minute for ever, which made each background round spend a lookup
// timeout on every such domain each minute, holding up the checks of the
// domains customers are waiting on. Once DNS answers again, the next
// check clears the finding.
func TestActiveDomainWhoseLookupsKeepFailingIsCheckedLessOften(t *testing.T) {
	ctx := context.Background()
	w := driftWorld(t, nil, &events{})
	const name = "shop.example.com"
	w.Set(t, "example.com.", cname("shop", target))
	if _, _, err := w.Engine.Add(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify = %s, %v; want active", d.Status, err)
	}

	w.DNS.FailWith(name+".", dns.RcodeServerFailure)
	runUntil(t, w, w.Clock.Now().Add(time.Hour)) // the hourly re-check fails
	first := get(t, w, "prj_pro", name)
	if first.Status != customdomain.StatusActive || codes(first.Diagnosis.Findings) != customdomain.FindingLookupFailed {
		t.Fatalf("after the first failed check: %s %s, want active with LOOKUP_FAILED", first.Status, codes(first.Diagnosis.Findings))
	}
	en, err := w.Store.DomainByName(ctx, name)
	if err != nil || !en.NextCheckAt.Equal(en.CheckedAt.Add(time.Minute)) {
		t.Fatalf("after the first failed check, next check at %s (checked %s, %v); want a minute later", en.NextCheckAt, en.CheckedAt, err)
	}

	runUntil(t, w, w.Clock.Now().Add(24*time.Hour))
	d := get(t, w, "prj_pro", name)
	if checks := d.Attempts - first.Attempts; d.Status != customdomain.StatusActive || checks > 40 {
		t.Fatalf("a day of failing lookups: %s after %d checks; want active, checked less often than every minute (at most 40 times, not %d)", d.Status, checks, 24*60)
	}
	if en, err := w.Store.DomainByName(ctx, name); err != nil || en.NextCheckAt.Sub(en.CheckedAt) > customdomain.DefaultRecheckActive {
		t.Fatalf("next check %s after the last (%v); want at most the hourly re-check", en.NextCheckAt.Sub(en.CheckedAt), err)
	}

	w.DNS.FailWith(name+".", dns.RcodeSuccess)
	runUntil(t, w, w.Clock.Now().Add(time.Hour))
	if d := get(t, w, "prj_pro", name); d.Status != customdomain.StatusActive || len(d.Diagnosis.Findings) != 0 {
		t.Fatalf("once DNS answers again: %s %s, want active and no findings", d.Status, codes(d.Diagnosis.Findings))
	}
}
