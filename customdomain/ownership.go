package customdomain

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/petstorekit/petstore"
)

// OwnershipChallengeLabel is the label below a domain where the ownership
// TXT record goes: _petstore-challenge.shop.example.com for
// shop.example.com. The underscore keeps it apart from any host name.
const OwnershipChallengeLabel = "_petstore-challenge"

// ownershipTokenPrefix starts every token, so a customer (or support)
// reading the zone can tell what the record is for.
const ownershipTokenPrefix = "petstore-verify="

// ownershipToken returns the token of a new entry for n held by
// projectID, and the proof it needs before it verifies ("" when none).
//
// The token is one per project and name (projectToken), so a TXT record
// already published stays valid: a claim record proves the name once its
// holder lets go of it too, and the project's own name back again keeps
// the token of its last entry, which may predate projectToken.
//
// A proof is needed when the latest removed entry belonged to another
// project (customers point CNAMEs at one shared target and often leave them
// after the project removes the name, so the CNAME alone proves nothing
// about who controls the name now), when the name lies under another
// project's wildcard at any depth, held now or last (whose CNAME answers
// for every name below it, and is as often left behind), and when the
// project's own last entry still waited for its proof: removing and
// re-adding must not skip it.
func (e *Engine) ownershipToken(ctx context.Context, projectID string, n Name) (token, proof string, err error) {
	last, err := e.lastFormer(ctx, n.ASCII)
	if err != nil {
		return "", "", err
	}
	token = projectToken(projectID, n.ASCII)
	if last != nil && last.ProjectID == projectID {
		token = cmp.Or(last.Token, last.OwnershipToken, token)
	}
	switch {
	case last != nil && last.ProjectID != projectID:
		return token, token, nil
	case last != nil && last.OwnershipToken != "" && last.VerifiedAt.IsZero():
		return token, token, nil
	}
	// Every wildcard above the name answers for it in DNS, at any depth,
	// although the platform serves a wildcard one label down only.
	for _, w := range wildcardAncestors(n.ASCII) {
		held, err := e.cfg.Store.DomainByName(ctx, w)
		switch {
		case err == nil && held.ProjectID != projectID:
			return token, token, nil
		case err != nil && petstore.ErrorCode(err) != petstore.CodeNotFound:
			return "", "", err
		case err != nil: // nobody holds the wildcard now: who held it last?
			former, err := e.lastFormer(ctx, w)
			if err != nil {
				return "", "", err
			}
			if former != nil && former.ProjectID != projectID {
				return token, token, nil
			}
		}
	}
	return token, "", nil
}

// lastFormer returns the most recently created entry for the name ascii
// that let go of it (removed or released), or nil when none did.
func (e *Engine) lastFormer(ctx context.Context, ascii string) (*Entry, error) {
	old, err := e.cfg.Store.ListDomains(ctx, DomainQuery{Name: ascii, Status: StatusRemoved})
	if err != nil {
		return nil, err
	}
	released, err := e.cfg.Store.ListDomains(ctx, DomainQuery{Name: ascii, Status: StatusReleased})
	if err != nil {
		return nil, err
	}
	old = append(old, released...)
	if len(old) == 0 {
		return nil, nil
	}
	last := slices.MaxFunc(old, func(a, b Entry) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return &last, nil
}

// createdAt returns the CreatedAt of a new entry for the name ascii made
// at now: now, or a millisecond (the stores' precision) after the latest
// former entry's CreatedAt when that is not before now. A name's entries
// are created one after another, each once the one before let go of the
// name (CreateDomain claims it atomically), and lastFormer finds who held
// it last by CreatedAt; a replica whose clock is behind another's must not
// date its entry before that one's.
func (e *Engine) createdAt(ctx context.Context, ascii string, now time.Time) (time.Time, error) {
	last, err := e.lastFormer(ctx, ascii)
	if err != nil || last == nil || last.CreatedAt.Before(now) {
		return now, err
	}
	return last.CreatedAt.Add(time.Millisecond), nil
}

// outstandingProof returns the token a check of entry must find, or ""
// once the entry has verified: the proof is needed once per claim, so a
// customer who deletes the TXT record afterwards (the note says they may)
// keeps the domain.
func outstandingProof(entry Entry) string {
	if !entry.VerifiedAt.IsZero() {
		return ""
	}
	return entry.OwnershipToken
}

// challengeName is the fully qualified owner of the ownership TXT record
// of the name ascii; a wildcard's is its base name's.
func challengeName(ascii string) string {
	return OwnershipChallengeLabel + "." + strings.TrimPrefix(ascii, "*.")
}

// challengeLabel is challengeName relative to the registered domain, the
// form DNS providers ask for.
func challengeLabel(n Name) string {
	label := strings.TrimPrefix(strings.TrimPrefix(n.Label, "*"), ".")
	if n.Kind == KindApex || label == "" {
		return OwnershipChallengeLabel
	}
	return OwnershipChallengeLabel + "." + label
}

// ownershipRecord is the TXT record a customer creates to prove control
// (required, or Optional when only a proxied record needs it).
func ownershipRecord(n Name, token string) Record {
	return Record{Type: "TXT", Name: challengeLabel(n), Value: token, TTL: DefaultRecordTTL}
}

// ownershipNote explains the extra record in the DNS instructions.
const ownershipNote = "This name was recently used by another project, or lies under another project's wildcard; prove you control its DNS by also creating the TXT record shown. It can be deleted once the domain is active."

// checkOwnership looks for the token among the TXT records at n's
// challenge name. It returns the finding when the proof is missing or
// wrong, nil when it is right, and the lookup error when DNS could not be
// asked.
func (e *Engine) checkOwnership(ctx context.Context, n Name, token string) (*Finding, error) {
	got, err := e.cfg.Resolver.Lookup(ctx, challengeName(n.ASCII), "TXT")
	if err != nil {
		return nil, err
	}
	var seen []Record
	for _, r := range got {
		if strings.TrimSpace(r.Value) == token {
			return nil, nil
		}
		seen = append(seen, Record{Type: "TXT", Name: challengeName(n.ASCII), Value: r.Value, TTL: r.TTL})
	}
	f := &Finding{
		Code: FindingOwnershipUnproven,
		Message: fmt.Sprintf("%s was recently used by another project, or lies under another project's wildcard, so its CNAME alone does not prove it is yours: "+
			"the ownership TXT record at %s is missing.", n.Unicode, challengeName(n.ASCII)),
		Fix: fmt.Sprintf("Create a TXT record with name %s and value %s (TTL 3600) at your DNS provider, then click Re-verify.",
			challengeLabel(n), token),
		Records: seen,
	}
	if len(seen) > 0 {
		f.Message = fmt.Sprintf("%s was recently used by another project, or lies under another project's wildcard, so its CNAME alone does not prove it is yours: "+
			"the TXT record at %s does not have the expected value.", n.Unicode, challengeName(n.ASCII))
		f.Fix = fmt.Sprintf("Change the TXT record %s to the value %s (TTL 3600), then click Re-verify.", challengeLabel(n), token)
	}
	return f, nil
}

// provenClaim lets whoever controls a name's DNS take it from another
// project that holds it without ever having verified it (pending or
// failed), so a project cannot keep a name it never proved from its
// owner. The claimant proves control with a TXT record whose token names
// the claimant's project and the name (projectToken), which the refusal
// names; it returns that token once the record is published, and takeOver
// then removes the holder's entry. A verified holder, or any other state,
// gets taken, the conflict existing answered. It writes nothing.
func (e *Engine) provenClaim(ctx context.Context, projectID string, n Name, taken error) (string, error) {
	held, err := e.cfg.Store.DomainByName(ctx, n.ASCII)
	switch {
	case petstore.ErrorCode(err) == petstore.CodeNotFound:
		return "", nil // free by now
	case err != nil:
		return "", err
	case held.ProjectID == projectID:
		return "", nil
	}
	if !claimable(held) {
		return "", taken
	}
	token := projectToken(projectID, n.ASCII)
	missing, err := e.checkOwnership(ctx, n, token)
	if err != nil {
		return "", petstore.Errorf(petstore.CodeUnavailable,
			"%s is attached to another project, which has not verified it, and its claim record could not be looked up now; try again", n.Unicode)
	}
	if missing != nil {
		return "", petstore.Errorf(petstore.CodeConflict,
			"%s is attached to another project, which has not verified it. If its DNS is yours, claim it: create a TXT record with name %s and value %s (TTL 3600) at your DNS provider, then add the name again. "+
				"Create its routing record only once the name is yours: the other project's entry would verify on it.",
			n.Unicode, challengeLabel(n), token)
	}
	return token, nil
}

// takeOver removes another project's unverified entry of n, for a claim
// provenClaim found proven. A name freed meanwhile is fine; one verified
// meanwhile is a conflict.
func (e *Engine) takeOver(ctx context.Context, r *round, n Name) error {
	_, err := e.change(ctx, r, 3, func() (Entry, error) {
		cur, err := e.cfg.Store.DomainByName(ctx, n.ASCII)
		if err == nil && !claimable(cur) {
			err = petstore.Errorf(petstore.CodeConflict, "%s was verified by the project holding it while it was claimed", n.Unicode)
		}
		return cur, err
	}, Removed{})
	if petstore.ErrorCode(err) == petstore.CodeNotFound {
		return nil
	}
	return err
}

// claimable reports whether an entry may be claimed: it never verified,
// and still waits for its records (pending) or gave up (failed).
func claimable(en Entry) bool {
	return en.VerifiedAt.IsZero() && (en.Status == StatusPending || en.Status == StatusFailed)
}

// projectToken is the token a project publishes to prove it controls the
// name ascii: to claim it from another project's unverified hold, and as a
// new entry's ownership proof. It is not secret: publishing it in the
// name's DNS is the proof, and it names the project, so a record published
// for one project proves nothing for another, whoever holds the name
// meanwhile.
func projectToken(projectID, ascii string) string {
	sum := sha256.Sum256([]byte("claim\x00" + projectID + "\x00" + ascii))
	return ownershipTokenPrefix + base64.RawURLEncoding.EncodeToString(sum[:16])
}
