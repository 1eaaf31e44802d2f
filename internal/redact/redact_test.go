package redact

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://app:s3cret@db:5432/petstore?sslmode=disable", "postgres://app:xxxxx@db:5432/petstore?sslmode=disable"},
		{"postgres://app@db:5432/petstore?password=s3cret&sslmode=disable", "postgres://app@db:5432/petstore?password=xxxxx&sslmode=disable"},
		{"postgres://u:p%zz@h/db", "postgres://u:xxxxx@h/db"},
		{"mysql://root:s3cret@127.0.0.1:3306/test", "mysql://root:xxxxx@127.0.0.1:3306/test"},
		{"redis://:s3cret@host:badport/0", "redis://:xxxxx@host:badport/0"},
		{"redis://default:s3cret@127.0.0.1:6379/0", "redis://default:xxxxx@127.0.0.1:6379/0"},
		{"rfc2136://update:AbC/dEf+Gh==@127.0.0.1:53?alg=hmac-sha256&zones=example.com", "rfc2136://update:xxxxx@127.0.0.1:53?alg=hmac-sha256&zones=example.com"},
		{"rfc2136://update:12/3@a@127.0.0.1:53?zones=x", "rfc2136://update:xxxxx@127.0.0.1:53?zones=x"},
		{"memory://?zones=example.com&listen=127.0.0.1:5353", "memory://?zones=example.com&listen=127.0.0.1:5353"},
		{"x://h/?Token=s3cret&a=%zz", "x://h/?xxxxx"},
		{"x://h/?a=b&TOKEN=s3cret", "x://h/?a=b&TOKEN=xxxxx"},
		{"x://h?p=1@2", "x://xxxxx"},
		{"127.0.0.1:6379", "127.0.0.1:6379"},
		{"user:s3cret@127.0.0.1:6379", "xxxxx"},
		{"sqlite:petstore.db", "sqlite:petstore.db"},
		// PostgreSQL's keyword/value form, which an operator may give
		// where a URL is wanted: bunopen refuses it, quoting it.
		{"host=db user=app password=s3cret dbname=petstore", "host=db user=app password=xxxxx dbname=petstore"},
		{"host=db PASSWORD = 's3cret \\' s3cret' dbname=petstore", "host=db PASSWORD = xxxxx dbname=petstore"},
		{"user=app password='s3cret s3cret", "user=app password=xxxxx"},
		{"Server=db;User Id=app;Password=s3cret;", "Server=db;User Id=app;Password=xxxxx"},
		{"host=db sslpassword=s3cret", "host=db sslpassword=xxxxx"},
		// host:port with a query, as Redis addresses and SQLite paths
		// are given: the query's secrets are masked as a URL's are.
		{"127.0.0.1:6379?password=s3cret", "127.0.0.1:6379?password=xxxxx"},
		{"127.0.0.1:6379?db=1&PASSWORD=s3cret", "127.0.0.1:6379?db=1&PASSWORD=xxxxx"},
		{"127.0.0.1:6379?password=%zz", "127.0.0.1:6379?xxxxx"},
		{"sqlite:/var/lib/petstore.db?_auth_user=app&_auth_pass=s3cret", "sqlite:/var/lib/petstore.db?_auth_user=app&_auth_pass=xxxxx"},
		{"host=db password=s3c?ret", "host=db password=xxxxx"},
		// Any parameter whose name says it holds a secret.
		{"redis://h:6379/0?client_secret=s3cret&db=2", "redis://h:6379/0?client_secret=xxxxx&db=2"},
		{"host=db _auth_pass=s3cret", "host=db _auth_pass=xxxxx"},
		{"memory", "memory"},
		{"", ""},
	} {
		got := URL(tc.in)
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("URL(%q) = %q shows the secret", tc.in, got)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"psk_s3cret:pro", "xxxxx:pro"},
		{"psk_s3cret:free, big:co:s3cret:enterprise:5000/2000000", "xxxxx:free,xxxxx:enterprise:5000/2000000"},
		{"s3cret", "xxxxx"},
		{"a:pro,,", "xxxxx:pro,,"},
		{"abc:s3cret", "xxxxx"},
		{"abc:s3cret:enterprise:5/s3cret", "xxxxx"},
	} {
		if got := Keys(tc.in); got != tc.want {
			t.Errorf("Keys(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStringFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var help strings.Builder
	fs.SetOutput(&help)
	db := StringFlag(fs, "db", "postgres://app:s3cret@db/petstore", URL, "database")
	none := StringFlag(fs, "none", "", URL, "unset")
	if err := fs.Parse([]string{"-none", "redis://:0ther@h:1", "-nosuch"}); err == nil {
		t.Fatal("-nosuch parsed")
	}
	if *db != "postgres://app:s3cret@db/petstore" || *none != "redis://:0ther@h:1" {
		t.Errorf("values: %q, %q", *db, *none)
	}
	fs.PrintDefaults()
	out := help.String()
	if strings.Contains(out, "s3cret") || strings.Contains(out, "0ther") {
		t.Errorf("usage shows a secret:\n%s", out)
	}
	if !strings.Contains(out, `(default postgres://app:xxxxx@db/petstore)`) {
		t.Errorf("usage does not show the redacted default:\n%s", out)
	}
}

func TestURLError(t *testing.T) {
	//lint:ignore SA1007 the URL is malformed on purpose: its error is what is redacted
	_, err := url.Parse("redis://:s3cret@host:badport")
	if err == nil {
		t.Fatal("no error")
	}
	err = fmt.Errorf("redis: %w", err)
	if !strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("url.Parse's error no longer quotes the URL (%v): URLError may be unneeded", err)
	}
	if got := URLError(err); strings.Contains(got.Error(), "s3cret") {
		t.Errorf("URLError = %v", got)
	}
	if other := errors.New("x"); URLError(other) != other || URLError(nil) != nil {
		t.Error("URLError changed an error that is not a URL's")
	}
}
