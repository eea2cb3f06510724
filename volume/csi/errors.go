package csi

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

// grpcErr turns a daemon error into a gRPC status with the CSI code its
// API code stands for, and doing (what was attempted) in front of the
// daemon's message.
func grpcErr(err error, doing string, args ...any) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && !errors.As(err, new(*api.Error)) {
		return err
	}
	what := fmt.Sprintf(doing, args...)
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Errorf(codes.DeadlineExceeded, "%s: %v", what, err)
	}
	ae := daemon.APIError(err)
	return status.Errorf(codeOf(ae.Code), "%s: %s", what, ae.Message)
}

// codeOf maps an API error code to the gRPC code CSI expects for it.
func codeOf(code string) codes.Code {
	switch code {
	case api.CodeNotFound:
		return codes.NotFound
	case api.CodeAlreadyExists:
		return codes.AlreadyExists
	case api.CodeConflict:
		return codes.FailedPrecondition
	case api.CodeInvalidInput, api.CodeInvalidPath, api.CodeInvalidPattern:
		return codes.InvalidArgument
	case api.CodeTooLarge, api.CodeLimitExceeded:
		return codes.ResourceExhausted
	case api.CodeForbidden, api.CodeUnauthorized:
		return codes.PermissionDenied
	case api.CodeUnavailable:
		return codes.Unavailable
	}
	return codes.Internal
}

// invalid is an InvalidArgument status.
func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}
