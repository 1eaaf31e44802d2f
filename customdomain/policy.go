package customdomain

import (
	"strings"
	"unicode"
)

// nonPublicSuffixes are special-use names (RFC 6761, RFC 6762, RFC 7686,
// RFC 8375, RFC 9476, ICANN's .internal) that never resolve in the public
// DNS and can never get a publicly trusted certificate: a customer who adds
// one could never verify it. .test and .example are special-use too but stay
// accepted, because tests and demos use them.
var nonPublicSuffixes = []string{"onion", "local", "localhost", "invalid", "internal", "alt", "home.arpa"}

// ParseNewName is ParseName plus the rules for a name being added as a
// custom domain (Engine.Add uses it):
//
//   - It must end in a public top-level domain: names under .onion, .local,
//     .localhost, .invalid, .internal, .alt and .home.arpa are refused, and
//     so are names whose last label is a number (127.1, shop.example.123,
//     x.0x1f), which browsers read as IPv4 addresses.
//   - Each label must pass the script rule of UTS #39's "Highly
//     Restrictive" level, and a label written wholly in
//     Cyrillic letters that look Latin ("аре" for "ape") is refused under
//     a non-Cyrillic TLD, as browsers do: such names are made to be
//     mistaken for another.
//
// These rules are kept out of ParseName so that names stored before they
// existed can still be looked up, verified and removed.
func ParseNewName(s string) (Name, error) {
	n, err := ParseName(s)
	if err != nil {
		return Name{}, err
	}
	for _, suf := range nonPublicSuffixes {
		if isUnder(n.ASCII, suf) {
			return Name{}, invalidName("%s is under .%s, a special-use name that never resolves in the public DNS and cannot get a public certificate; add a name under a public top-level domain", clip(n.Unicode), suf)
		}
	}
	if endsInNumber(n.ASCII) {
		return Name{}, invalidName("%s ends in a number, so browsers read it as an IP address, and no top-level domain is numeric; enter a domain name like shop.example.com", clip(n.Unicode))
	}
	labels := strings.Split(n.Unicode, ".")
	tld := labels[len(labels)-1]
	for _, l := range labels {
		if err := checkScripts(l); err != nil {
			return Name{}, invalidName("%s: the label %q %s", clip(n.Unicode), clip(l), err.Error())
		}
		if wholeScriptConfusable(l, tld) {
			return Name{}, invalidName("%s: the label %q is written in Cyrillic letters that look like Latin ones, so it can be mistaken for another name; it is not accepted under .%s", clip(n.Unicode), clip(l), tld)
		}
	}
	return n, nil
}

// endsInNumber reports whether the last label of the name ascii is a
// number, decimal or 0x hexadecimal: the URL Standard then parses the
// whole host as an IPv4 address (127.1 is 127.0.0.1; example.123 is no
// valid host at all), so browsers never ask for it by name, and RFC 3696
// §2 keeps top-level domains from being all-numeric.
func endsInNumber(ascii string) bool {
	last := ascii[strings.LastIndexByte(ascii, '.')+1:]
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// scriptError explains a label's mix of scripts.
type scriptError string

func (e scriptError) Error() string { return string(e) }

// allowedMixes are the script sets UTS #39 §5.2 "Highly Restrictive"
// allows in one identifier besides a single script: Japanese, Chinese
// (with Bopomofo) and Korean writing, each with Latin.
var allowedMixes = [][]string{
	{"Latin", "Han", "Hiragana", "Katakana"},
	{"Latin", "Han", "Bopomofo"},
	{"Latin", "Han", "Hangul"},
}

// checkScripts applies UTS #39's "Highly Restrictive" script rule to one
// label: its letters come from a single script, or from one of the
// allowedMixes; characters of the Common and Inherited scripts (digits,
// hyphens, combining marks) go with any script. So "bücher" and "店舗"
// and "ストアshop" pass, and "аpple" (a Cyrillic а before Latin letters)
// does not. Scripts are those of the unicode package's tables, the
// Script property of Unicode (UAX #24) without Script_Extensions.
func checkScripts(label string) error {
	var used []string
	for _, r := range label {
		s := scriptOf(r)
		if s == "" || s == "Common" || s == "Inherited" {
			continue
		}
		if !contains(used, s) {
			used = append(used, s)
		}
	}
	if len(used) <= 1 {
		return nil
	}
	for _, mix := range allowedMixes {
		ok := true
		for _, s := range used {
			if !contains(mix, s) {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
	}
	return scriptError("mixes the " + strings.Join(used, " and ") + " scripts, which can make one name look like another; write each label in one script")
}

// scriptOf returns the name of r's script in the unicode package's tables,
// or "" when none lists it.
func scriptOf(r rune) string {
	// The common cases first: most names are ASCII.
	switch {
	case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
		return "Latin"
	case r < 0x80:
		return "Common"
	}
	for _, name := range []string{"Latin", "Cyrillic", "Greek", "Han", "Hiragana", "Katakana", "Hangul", "Bopomofo", "Common", "Inherited"} {
		if unicode.Is(unicode.Scripts[name], r) {
			return name
		}
	}
	for name, table := range unicode.Scripts {
		if unicode.Is(table, r) {
			return name
		}
	}
	return ""
}

// latinLookalikes are the lower-case Cyrillic letters that render like
// Latin ones in common fonts (а е о р с у х, and і ј ѕ һ ԁ ԛ ԝ ӏ ү), as
// listed in UTS #39's confusables data. Names reach this check lower-cased
// by IDNA, so upper-case lookalikes (В К М Н Т) need no entry.
const latinLookalikes = "аеорсухіјѕһԁԛԝӏү"

// wholeScriptConfusable reports whether label is written in Cyrillic
// letters that all look like Latin ones while the TLD is not Cyrillic: a
// whole-script confusable such as "аррlе" for "apple" (UTS #39 §4), which
// the single-script rule alone lets through. Under a Cyrillic TLD (.рф)
// such a label is ordinary Russian and is accepted.
func wholeScriptConfusable(label, tld string) bool {
	if scriptOfLabel(tld) == "Cyrillic" {
		return false
	}
	letters := 0
	for _, r := range label {
		if !unicode.IsLetter(r) {
			continue
		}
		if !strings.ContainsRune(latinLookalikes, r) {
			return false
		}
		letters++
	}
	return letters > 0
}

// scriptOfLabel is the one script of a label's letters, or "" for none
// or several.
func scriptOfLabel(label string) string {
	one := ""
	for _, r := range label {
		s := scriptOf(r)
		if s == "" || s == "Common" || s == "Inherited" {
			continue
		}
		if one != "" && one != s {
			return ""
		}
		one = s
	}
	return one
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
