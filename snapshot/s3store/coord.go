package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/vfsd/vfsd/coord"
)

// Coord returns the fleet's control-plane store in the bucket (see package
// coord): keys under PREFIX/fleet/, written with S3's conditional writes —
// If-None-Match: * to create, If-Match: ETag to replace — so that every
// change of an owner record or a ref is a compare-and-swap. Reads are
// bounded (coord.MaxValueBytes): the bucket's other tenants may write
// anything.
func (s *Store) Coord() *CoordBackend {
	return &CoordBackend{s: s, prefix: s.fleetPrefix()}
}

func (s *Store) fleetPrefix() string {
	if s.cfg.Prefix == "" {
		return "fleet/"
	}
	return s.cfg.Prefix + "/fleet/"
}

// CoordBackend is a coord.Backend in an S3 bucket.
type CoordBackend struct {
	s      *Store
	prefix string
}

var _ coord.Backend = (*CoordBackend)(nil)

func (c *CoordBackend) err(op, key string, err error) error {
	return fmt.Errorf("%s %s in %s: %w", op, key, c.s.cfg, err)
}

// isConflict reports whether err is a refused conditional write: 412
// Precondition Failed, or 409 ConditionalRequestConflict (AWS, when
// another conditional write of the key is in flight).
func isConflict(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusPreconditionFailed || r.StatusCode == http.StatusConflict ||
		r.Code == "PreconditionFailed" || r.Code == "ConditionalRequestConflict"
}

// Get implements coord.Backend; it reads at most coord.MaxValueBytes+1
// bytes of the object.
func (c *CoordBackend) Get(ctx context.Context, key string) (coord.Item, error) {
	if err := c.s.checkOpen(); err != nil {
		return coord.Item{}, err
	}
	obj, err := c.s.client.GetObject(ctx, c.s.cfg.Bucket, c.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		if isNotFound(err) {
			return coord.Item{}, fmt.Errorf("get %s: %w", key, coord.ErrNotFound)
		}
		return coord.Item{}, c.err("get", key, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(io.LimitReader(obj, coord.MaxValueBytes+1))
	if err != nil {
		if isNotFound(err) {
			return coord.Item{}, fmt.Errorf("get %s: %w", key, coord.ErrNotFound)
		}
		return coord.Item{}, c.err("get", key, err)
	}
	info, err := obj.Stat()
	if err != nil {
		if isNotFound(err) {
			return coord.Item{}, fmt.Errorf("get %s: %w", key, coord.ErrNotFound)
		}
		return coord.Item{}, c.err("get", key, err)
	}
	if len(b) > coord.MaxValueBytes {
		return coord.Item{Version: info.ETag}, fmt.Errorf("get %s (%d bytes): %w", key, info.Size, coord.ErrTooLarge)
	}
	return coord.Item{Value: b, Version: info.ETag}, nil
}

// Put implements coord.Backend with a conditional PutObject.
func (c *CoordBackend) Put(ctx context.Context, key string, value []byte, cond coord.Cond) (string, error) {
	if err := c.s.checkOpen(); err != nil {
		return "", err
	}
	opts := minio.PutObjectOptions{ContentType: "application/json", DisableMultipart: true}
	switch {
	case cond.Absent:
		opts.SetMatchETagExcept("*")
	case cond.Match != "":
		opts.SetMatchETag(strings.Trim(cond.Match, `"`))
	}
	info, err := c.s.client.PutObject(ctx, c.s.cfg.Bucket, c.prefix+key, bytes.NewReader(value), int64(len(value)), opts)
	if err != nil {
		// If-Match on a missing key: S3 answers 404.
		if isConflict(err) || cond.Match != "" && isNotFound(err) {
			return "", fmt.Errorf("put %s: %w", key, coord.ErrConflict)
		}
		return "", c.err("put", key, err)
	}
	return info.ETag, nil
}

// Delete implements coord.Backend.
func (c *CoordBackend) Delete(ctx context.Context, key string) error {
	if err := c.s.checkOpen(); err != nil {
		return err
	}
	if err := c.s.client.RemoveObject(ctx, c.s.cfg.Bucket, c.prefix+key, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return c.err("delete", key, err)
	}
	return nil
}

// List implements coord.Backend.
func (c *CoordBackend) List(ctx context.Context, prefix string, fn func(string) error) error {
	if err := c.s.checkOpen(); err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for obj := range c.s.client.ListObjects(lctx, c.s.cfg.Bucket, minio.ListObjectsOptions{Prefix: c.prefix + prefix, Recursive: true}) {
		if obj.Err != nil {
			return c.err("list", prefix, obj.Err)
		}
		k, ok := strings.CutPrefix(obj.Key, c.prefix)
		if !ok {
			continue
		}
		if err := fn(k); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// RawPut writes value under the fleet key as is, with no condition: for
// tests that play a hostile tenant of the bucket.
func (c *CoordBackend) RawPut(ctx context.Context, key string, value []byte) error {
	_, err := c.s.client.PutObject(ctx, c.s.cfg.Bucket, c.prefix+key, bytes.NewReader(value), int64(len(value)), minio.PutObjectOptions{DisableMultipart: true})
	return err
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return errors.New("s3 store: closed")
	}
	return nil
}
