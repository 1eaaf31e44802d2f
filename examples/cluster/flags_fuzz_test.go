package main

import (
	"strings"
	"testing"
)

// FuzzClusterFlags: the cluster's flags are refused with an error that
// never shows the password given in -db or -redis, or read into a
// configuration with both, a positive -db-timeout and a -ratelimit-fail
// of open or closed.
func FuzzClusterFlags(f *testing.F) {
	f.Add("postgres", "s3cr3tpass", "127.0.0.1:5432/db", "redis", "r3d1spass", "127.0.0.1:6379", "5s", "open")
	f.Add("mysql", "s3cr3tpass", "tcp(h:3306)/db", "rediss", "r3d1s%zz", "h:notaport", "-1s", "closed")
	f.Add("sqlite", "s3cr3tpass", "x.db", "redis", "", "", "1h", "maybe")
	f.Fuzz(func(t *testing.T, dbScheme, dbPassword, dbRest, redisScheme, redisPassword, redisRest, timeout, fail string) {
		db := dbScheme + "://u:" + dbPassword + "@" + dbRest
		rdb := redisScheme + "://u:" + redisPassword + "@" + redisRest
		args := []string{"-db", db, "-redis", rdb, "-db-timeout", timeout, "-ratelimit-fail", fail}
		cfg, err := parseConfig(args, func(string) string { return "" })
		if err != nil {
			for _, secret := range []string{dbPassword, redisPassword} {
				if len(secret) < 6 || strings.Contains(strings.Join([]string{dbScheme, dbRest, redisScheme, redisRest, timeout, fail}, " "), secret) {
					continue
				}
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("%q: the error shows a password: %v", args, err)
				}
			}
			return
		}
		if cfg.db != db || cfg.redis != rdb || cfg.dbTimeout <= 0 || cfg.failOpen != (fail == "open") || fail != "open" && fail != "closed" {
			t.Fatalf("%q read into %+v", args, cfg)
		}
	})
}
