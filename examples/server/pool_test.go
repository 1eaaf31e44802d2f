package main

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/petstorekit/petstore/internal/testenv"
)

// loadKey is an Enterprise key whose limits 300 requests cannot reach, so
// that only the database decides how they end.
const loadKey = "psk_load_3kQ9vX7mWp2LrT8sYz4N"

// TestPoolCappedUnderBurst sends 300 concurrent requests to a server on
// PostgreSQL. Without a cap each would open its own connection, and past
// the server's max_connections PostgreSQL answers "sorry, too many
// clients already": 503s for this server and for everyone else on the
// database. With -db-max-conns the burst queues in the server instead.
func TestPoolCappedUnderBurst(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-max-conns", "8",
		"-keys", loadKey + ":enterprise:100000/1000000"}, nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 300}}
	defer client.CloseIdleConnections()

	const n = 300
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", base+"/v1/pets", nil)
			req.Header.Set("Authorization", "Bearer "+loadKey)
			res, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			var body json.RawMessage
			_ = json.NewDecoder(res.Body).Decode(&body)
			statuses <- res.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[200] != n {
		t.Fatalf("statuses of %d concurrent requests: %v; want all 200", n, counts)
	}

}
