// Package petstore is the domain language of the Petstore API: pets and
// their statuses, the Error type and its codes, plans and API keys, and the
// service and store interfaces that every adapter implements.
//
// The package depends on nothing else of the module. Adapters live in
// subpackages named after what they wrap (adapters/memstore,
// adapters/bunstore, ...), httpx serves the /v1 API over any of them, and
// petstoretest runs a whole fake petstore inside a test.
//
// A minimal server over the in-memory store:
//
//	store := memstore.New()
//	keys := petstore.NewKeys(store)
//	_, secret, _ := keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})
//	api, _ := httpx.New(httpx.Config{
//		Service: petstore.NewService(store),
//		Auth:    keys,
//	})
//	mux := http.NewServeMux()
//	mux.Handle("/v1/", api)
//	log.Printf("try: curl -H 'Authorization: Bearer %s' localhost:8080/v1/pets", secret)
//	log.Fatal(http.ListenAndServe(":8080", mux))
//
// Every error a service or store returns to a client is an *Error with one
// of the Code constants; ErrorCode and ErrorMessage turn any other error into
// "internal" with a generic message so internals never leak. Which HTTP
// status answers each code is httpx's business (httpx.StatusOf).
//
// Validation: the rules of a new pet are validator/v10 tags on NewPet
// (validator is the library's chosen rule engine, and tags keep the rules
// beside the fields they govern); one translator, keyed by tag, words a
// failed rule for the client, naming the field by its JSON name. Decoders
// check only the JSON's shape. A rule that several layers enforce (a pet
// or order status, a plan, a key) is worded once, by its constructor
// (PetStatusError, PlanError, UnauthorizedError, ...), so that
// the service, httpx and the key tools answer alike. Orders and keys have
// few, cross-field rules, written as plain Validate methods.
package petstore
