package petstore

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"
)

// MaxNameLength is the longest pet name accepted, in Unicode code points.
// The spec sets no limit; an unbounded name would let one request fill a
// database row, so the library chooses 255.
const MaxNameLength = 255

var (
	validateOnce sync.Once
	validate     *validator.Validate
)

func theValidator() *validator.Validate {
	validateOnce.Do(func() {
		v := validator.New(validator.WithRequiredStructEnabled())
		// Rules name fields as clients write them: by their JSON names.
		v.RegisterTagNameFunc(func(f reflect.StructField) string {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				return f.Name
			}
			return name
		})
		// Both registrations are constant and cannot fail.
		_ = v.RegisterValidation("petname", func(fl validator.FieldLevel) bool {
			return nameProblem(fl.Field().String()) == ""
		})
		_ = v.RegisterValidation("petstatus", func(fl validator.FieldLevel) bool {
			return PetStatus(fl.Field().String()).Valid()
		})
		validate = v
	})
	return validate
}

// nameProblem returns why name is not acceptable, or "" when it is.
func nameProblem(name string) string {
	switch {
	case name == "":
		return "name is required"
	case !utf8.ValidString(name):
		return "name must be valid UTF-8"
	case utf8.RuneCountInString(name) > MaxNameLength:
		return "name must be at most 255 characters"
	case strings.TrimFunc(name, unicode.IsSpace) == "":
		return "name must not be blank"
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "name must not contain control characters"
	}
	return ""
}

// Validate checks a NewPet against the library's rules and returns an
// invalid_request *Error whose message names the first offending field.
//
// The rules are the struct's validate tags, checked by validator/v10; the
// one translator below words each failed tag for a client. The JSON
// decoders check only the body's shape (types, unknown fields) and leave
// the rules to Validate.
func (p NewPet) Validate() error {
	err := theValidator().Struct(p)
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) || len(verrs) == 0 {
		return Errorf(CodeInvalidRequest, "invalid pet")
	}
	return translate(verrs[0])
}

// translate words a failed validation tag as the invalid_request a client
// sees, naming the field by its JSON name.
func translate(fe validator.FieldError) *Error {
	switch fe.Tag() {
	case "petname":
		return Errorf(CodeInvalidRequest, "%s", nameProblem(fe.Value().(string)))
	case "petstatus":
		return PetStatusError()
	case "gte":
		if fe.Field() == "categoryId" {
			return CategoryIDError()
		}
		return Errorf(CodeInvalidRequest, "%s must be an integer >= %s", fe.Field(), fe.Param())
	}
	return Errorf(CodeInvalidRequest, "%s is invalid", fe.Field())
}
