// Package strictjson decodes one JSON value strictly: a field the Go type
// has no place for is an error, and so is anything but white space after
// the value. It is the one strict decoder of vfsd: the daemon's request
// bodies, the API's own UnmarshalJSON, the tools' and contracts'
// parameters and the policy objects use it. It words nothing for users:
// each caller says what the thing decoded is from the typed errors.
//
// The package is a leaf: it imports nothing of vfsd.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// ErrTrailingData is returned when the value is followed by anything but
// white space.
var ErrTrailingData = errors.New("data after the JSON value")

// UnknownFieldError is an object field that the Go type decoded into has
// no field for. Its Error is encoding/json's own text (json: unknown field
// "name"), so callers that show the decoder's error unchanged still do.
type UnknownFieldError struct {
	Field string // the field's name as the JSON gave it
	err   error
}

func (e *UnknownFieldError) Error() string { return e.err.Error() }

// Decode decodes data, one JSON value, into v. Its errors are
// *UnknownFieldError, ErrTrailingData, or encoding/json's own
// (*json.UnmarshalTypeError, *json.SyntaxError, io.EOF for empty data,
// io.ErrUnexpectedEOF, or an error of v's UnmarshalJSON). When both an
// unknown field and a wrongly typed value occur, the first in the text
// is reported, as encoding/json does.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return classify(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailingData
	}
	return nil
}

// classify turns encoding/json's unknown-field error, which has no type
// of its own, into an *UnknownFieldError.
func classify(err error) error {
	rest, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return err
	}
	name, uerr := strconv.Unquote(rest)
	if uerr != nil {
		return err
	}
	return &UnknownFieldError{Field: name, err: err}
}
