package ratelimittest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/ratelimit"
)

// RunAdmin checks a store's ratelimit.Admin: a ban a strike started is
// listed until lifted, lifting it lets the subject be decided by its
// windows again, and Usage reports the windows without counting.
func RunAdmin(t *testing.T, newStore func(t testing.TB) ratelimit.Store) {
	s := newStore(t)
	admin, ok := s.(ratelimit.Admin)
	if !ok {
		t.Fatalf("%T does not implement ratelimit.Admin", s)
	}
	ctx := context.Background()
	now := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	sub := subject()
	rates := []ratelimit.Rate{{Name: "minute", Quota: 2, Period: time.Minute}, {Name: "day", Quota: 100, Period: 24 * time.Hour}}
	policy := ratelimit.BanPolicy{Strikes: 1, Within: time.Minute, Grace: -1, Duration: 15 * time.Minute}
	take := func(at time.Time) ratelimit.Result {
		t.Helper()
		res, err := s.Take(ctx, ratelimit.Request{Subject: sub, Rates: rates, Now: at, Ban: policy})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	banned := func(at time.Time) (ratelimit.Ban, bool) {
		t.Helper()
		bans, err := admin.Bans(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSortedFunc(bans, func(a, b ratelimit.Ban) int { return strings.Compare(a.Subject, b.Subject) }) {
			t.Fatalf("Bans not ordered by subject: %v", bans)
		}
		for _, b := range bans {
			if b.Subject == sub {
				return b, true
			}
		}
		return ratelimit.Ban{}, false
	}

	fresh, err := admin.Usage(ctx, sub, rates, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(fresh) != 2 || fresh[0].Remaining != 2 || fresh[1].Remaining != 100 || !fresh[0].Reset.Equal(now.Add(time.Minute)) {
		t.Fatalf("Usage of a new subject = %+v", fresh)
	}
	take(now)
	take(now.Add(time.Second))
	if res := take(now.Add(2 * time.Second)); res.Banned || res.BanStarted {
		t.Fatalf("first strike: %+v, want a refusal without ban", res)
	}
	start := now.Add(3 * time.Second)
	if res := take(start); !res.Banned || !res.BanStarted {
		t.Fatalf("second strike: %+v, want the ban to start", res)
	}
	if res := take(start.Add(time.Second)); !res.Banned || res.BanStarted {
		t.Fatalf("during the ban: %+v, want banned, not started again", res)
	}
	b, ok := banned(start.Add(time.Second))
	if !ok || !b.Until.Equal(start.Add(15*time.Minute)) {
		t.Fatalf("Bans: %+v, %v; want %s until %s", b, ok, sub, start.Add(15*time.Minute))
	}
	use, err := admin.Usage(ctx, sub, rates, start.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if use[0].Remaining != 0 || use[1].Remaining != 98 || !use[0].Reset.Equal(now.Add(time.Minute)) {
		t.Fatalf("Usage = %+v, want minute 0 left (resetting %s), day 98 left", use, now.Add(time.Minute))
	}
	again, _ := admin.Usage(ctx, sub, rates, start.Add(time.Second))
	if again[1].Remaining != 98 {
		t.Fatal("Usage counted a request")
	}
	if lifted, err := admin.Lift(ctx, sub, start.Add(2*time.Second)); err != nil || !lifted {
		t.Fatalf("Lift = %v, %v; want true", lifted, err)
	}
	if _, ok := banned(start.Add(2 * time.Second)); ok {
		t.Fatal("still listed after Lift")
	}
	if res := take(start.Add(3 * time.Second)); res.Banned || res.Allowed {
		t.Fatalf("after Lift: %+v, want refused by the full minute only", res)
	}
	if lifted, err := admin.Lift(ctx, sub, start.Add(4*time.Second)); err != nil || lifted {
		t.Fatalf("second Lift = %v, %v; want false", lifted, err)
	}
	if res := take(now.Add(time.Minute + time.Second)); !res.Allowed {
		t.Fatalf("next minute: %+v, want admitted", res)
	}
}
