// Package redact hides secrets in what a program prints about its
// configuration: connection URLs (database, Redis, DNS provider), lists of
// API keys, and the flags that carry them. It is the one owner of how a
// secret is masked, so -h, error messages and logs agree.
package redact

import (
	"errors"
	"flag"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces every secret.
const Mask = "xxxxx"

// secretWords make a query parameter or keyword secret when its name,
// compared ignoring case, contains one ("password", "_auth_pass",
// "client_secret", "access_token"); "auth" alone is one too.
var secretWords = []string{"pass", "pwd", "secret", "token", "apikey", "api_key"}

// isSecretParam reports whether a parameter named name holds a secret.
func isSecretParam(name string) bool {
	name = strings.ToLower(name)
	return name == "auth" || slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(name, w) })
}

// URL returns s with the password of its user info and the values of
// secret query parameters (password=, secret=, token=...) replaced by
// Mask. It reads s the way the programs here do, not with url.Parse: the
// user info is everything between "://" and the last "@" before the query,
// so a base64 TSIG secret with "/" or "+" in it is masked whole. A string
// without "://" is all masked when it has an "@"; otherwise the values of
// its secret keywords are, as in PostgreSQL's keyword/value form
// ("host=db password=..."), which an operator may give where a URL is
// wanted, and those of its query's secret parameters ("host:port?password=",
// "sqlite:PATH?_auth_pass=").
func URL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		if strings.Contains(s, "@") {
			return Mask
		}
		// Keywords first: a quoted or bare value may hold a "?".
		s = secretKeyword.ReplaceAllString(s, "${1}"+Mask)
		if before, query, hasQuery := strings.Cut(s, "?"); hasQuery {
			return before + "?" + redactQuery(query) // host:port?password=..., sqlite:PATH?...
		}
		return s
	}
	beforeQuery, query, hasQuery := strings.Cut(rest, "?")
	if at := strings.LastIndex(beforeQuery, "@"); at >= 0 {
		if name, _, hasPass := strings.Cut(beforeQuery[:at], ":"); hasPass {
			beforeQuery = name + ":" + Mask + beforeQuery[at:]
		}
	} else if strings.Contains(query, "@") {
		// An "@" only after a "?": the query may hold the rest of the
		// user info; nothing in it can be trusted to be public.
		return scheme + "://" + Mask
	}
	if !hasQuery {
		return scheme + "://" + beforeQuery
	}
	return scheme + "://" + beforeQuery + "?" + redactQuery(query)
}

// secretKeyword matches a secret parameter (isSecretParam) given as keyword=value, the
// value unquoted (up to the next space) or single-quoted with backslash
// escapes, as libpq reads it (an unterminated quote runs to the end).
var secretKeyword = regexp.MustCompile(`(?i)((?:^|[\s;])(?:auth|[\w.-]*(?:` + strings.Join(secretWords, "|") + `)[\w.-]*)\s*=\s*)(?:'(?:[^'\\]|\\.)*(?:'|\\?$)|[^\s']\S*|$)`)

// redactQuery masks the values of the secret parameters of a raw query,
// keeping the others as written; a query that does not parse is masked.
func redactQuery(raw string) string {
	if _, err := url.ParseQuery(raw); err != nil {
		return Mask
	}
	parts := strings.Split(raw, "&")
	for i, part := range parts {
		name, _, hasValue := strings.Cut(part, "=")
		if !hasValue {
			continue
		}
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if isSecretParam(name) {
			parts[i] = part[:strings.Index(part, "=")+1] + Mask
		}
	}
	return strings.Join(parts, "&")
}

// URLError returns err, unless err is or wraps a *url.Error: its text
// quotes the whole URL, password included, so it becomes an error saying
// only what was wrong with the URL, in general terms.
func URLError(err error) error {
	var ue *url.Error
	if err == nil || !errors.As(err, &ue) {
		return err
	}
	return errors.New("malformed URL (it is not shown: it may hold a password)")
}

// Keys masks the secrets of a list of API keys as the -keys flag takes it:
// comma-separated KEY:PLAN or KEY:enterprise:PERMIN/PERDAY. Each secret
// becomes Mask; a plan that is one of the known ones stays, so a reader
// can still see what was given. Anything else in an item is taken for
// part of the secret.
func Keys(s string) string {
	if strings.TrimSpace(s) == "" {
		return s
	}
	items := strings.Split(s, ",")
	for i, item := range items {
		if strings.TrimSpace(item) == "" {
			continue
		}
		items[i] = Mask + knownPlan(item)
	}
	return strings.Join(items, ",")
}

// knownPlan returns the ":PLAN" an item of -keys ends with, or "" when it
// ends with none of the plans.
func knownPlan(item string) string {
	if j := strings.LastIndex(item, ":enterprise:"); j >= 0 {
		perMin, perDay, ok := strings.Cut(item[j+len(":enterprise:"):], "/")
		if ok && digits(perMin) && digits(perDay) {
			return item[j:]
		}
		return ""
	}
	for _, plan := range []string{":free", ":pro", ":business"} {
		if strings.HasSuffix(item, plan) {
			return plan
		}
	}
	return ""
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Flag is a flag.Value holding a string that may carry a secret. Its
// String, which the flag package prints as the default in -h and quotes
// in its errors, shows the value through a redactor only.
type Flag struct {
	p    *string
	show func(string) string
}

// String returns the value as its redactor shows it.
func (f *Flag) String() string {
	if f == nil || f.p == nil || f.show == nil {
		return ""
	}
	return f.show(*f.p)
}

// Set stores s as it is; it never fails, so no error quotes it.
func (f *Flag) Set(s string) error {
	*f.p = s
	return nil
}

// StringFlag defines a string flag like flag.FlagSet.String, with the
// default value, whose String (and so -h) shows only show(value).
func StringFlag(fs *flag.FlagSet, name, value string, show func(string) string, usage string) *string {
	p := new(string)
	*p = value
	fs.Var(&Flag{p: p, show: show}, name, usage)
	return p
}
