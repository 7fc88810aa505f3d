package live

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// access is what a read needs: a permission, and a read-only role that grants it.
type access struct {
	Permission, Role string
}

// refusal is a read an API did not answer: what was being read, the API's answer (its
// status and message), and the fix that answer calls for. Only a denial names the
// permission and the role: the same read against an endpoint that does not serve the API
// (the Pub/Sub emulator has no IAM service) or in a project where the API is disabled
// fails for a reason no role fixes.
type refusal struct {
	reading string
	need    access
	err     error
}

// refused is the error of reading, which needs need, answered by err.
func refused(reading string, need access, err error) error {
	return &refusal{reading: reading, need: need, err: err}
}

func (r *refusal) Unwrap() error { return r.err }

func (r *refusal) Error() string {
	code, message := answer(r.err)
	fix := ""
	switch {
	case disabled(r.err):
		fix = "the API is not enabled in the project: enable it there; no role fixes this"
	case code == codes.PermissionDenied:
		fix = fmt.Sprintf("grant %s, in %s", r.need.Permission, r.need.Role)
	case code == codes.Unauthenticated:
		fix = "the credentials were not accepted: renew them (gcloud auth application-default login)"
	case code == codes.Unimplemented:
		fix = "the endpoint does not serve this API, which no role fixes; the Pub/Sub emulator serves only Pub/Sub"
	case code == codes.Unavailable || code == codes.DeadlineExceeded || code == codes.ResourceExhausted || code == codes.Internal:
		fix = "a failure on the API's side: audit again later"
	default:
		fix = fmt.Sprintf("reading it needs %s, in %s", r.need.Permission, r.need.Role)
	}
	return fmt.Sprintf("%s: %s (%s)", r.reading, message, fix)
}

// answer is the status code err carries (codes.Unknown when none) and its text: "CODE:
// message" for an API's answer, err's own text otherwise.
func answer(err error) (codes.Code, string) {
	var herr *googleapi.Error
	if errors.As(err, &herr) { // the REST clients (Resource Manager)
		code := httpCode(herr.Code)
		msg := herr.Message
		if msg == "" {
			msg = http.StatusText(herr.Code)
		}
		return code, fmt.Sprintf("HTTP %d %s: %s", herr.Code, code, msg)
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.OK {
		return s.Code(), fmt.Sprintf("%s: %s", s.Code(), s.Message())
	}
	return codes.Unknown, err.Error()
}

// httpCode is the gRPC code Google's APIs answer an HTTP status with.
func httpCode(code int) codes.Code {
	switch code {
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	case http.StatusInternalServerError:
		return codes.Internal
	}
	return codes.Unknown
}

// disabled reports whether err says the API is not enabled in the project (Google answers
// PermissionDenied with the reason SERVICE_DISABLED).
func disabled(err error) bool {
	ae, ok := apierror.FromError(err)
	return ok && ae.Reason() == "SERVICE_DISABLED"
}
