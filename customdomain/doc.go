// Package customdomain is the custom-domain engine of the hosting platform: it
// normalises names, tells customers which DNS records to create, verifies
// them, tracks each domain through its states, keeps the primary domain and
// redirects, answers the edge's routing questions and diagnoses problems.
// It holds no HTTP: httpx serves its dashboard API and edge.
package customdomain
