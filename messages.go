package petstore

// The errors of rules that more than one layer enforces (the service, the
// HTTP decoders, the key tools) are worded once, here, so that every layer
// answers a broken rule with the same message. Each call returns a new
// *Error, which the caller may wrap or change.

// PetStatusError is the invalid_request answer to a pet status that is not
// one of the three.
func PetStatusError() *Error {
	return Errorf(CodeInvalidRequest, "status must be one of available, pending, sold")
}

// OrderStatusError is the invalid_request answer to an order status that
// is not one of the three.
func OrderStatusError() *Error {
	return Errorf(CodeInvalidRequest, "status must be one of placed, approved, delivered")
}

// CategoryIDError is the invalid_request answer to a categoryId that is not
// an integer of at least 1.
func CategoryIDError() *Error {
	return Errorf(CodeInvalidRequest, "categoryId must be an integer >= 1")
}

// PlanError is the invalid_request answer to a plan name that is not one of
// the four.
func PlanError() *Error {
	return Errorf(CodeInvalidRequest, "plan must be one of free, pro, business, enterprise")
}

// UnauthorizedError is the unauthorized answer to a missing, malformed,
// unknown or revoked API key: one message for all, so that the answer
// tells a guesser nothing about which it was.
func UnauthorizedError() *Error {
	return Errorf(CodeUnauthorized, "missing or invalid API key")
}
