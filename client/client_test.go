package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

func TestNewNeedsAnAddress(t *testing.T) {
	_, err := client.New(client.Options{})
	require.ErrorContains(t, err, "socket or TCP address")
}

func TestUnreachable(t *testing.T) {
	c, err := client.New(client.Options{Socket: filepath.Join(t.TempDir(), "none.sock")})
	require.NoError(t, err)
	_, err = c.Health(context.Background())
	var ue *client.UnreachableError
	require.ErrorAs(t, err, &ue)
	require.Contains(t, err.Error(), "start it with vfsd serve")
	require.NotContains(t, err.Error(), "http://vfsd", "the message names the socket, not a made-up URL")
}

func TestErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "Bearer tok", r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/v1/sessions/x":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"not_found","message":"no session \"x\""}}`))
		default:
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("upstream said no"))
		}
	}))
	defer srv.Close()
	c, err := client.New(client.Options{Addr: strings.TrimPrefix(srv.URL, "http://"), Token: "tok"})
	require.NoError(t, err)
	_, err = c.Session(context.Background(), "x")
	require.Equal(t, api.CodeNotFound, client.Code(err))
	require.True(t, errors.Is(err, &api.Error{Code: api.CodeNotFound}))
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusNotFound, ae.Status)

	// A response that is not the API's envelope still becomes an error.
	_, err = c.Sessions(context.Background())
	require.Equal(t, api.CodeInternal, client.Code(err))
	require.ErrorContains(t, err, "HTTP 502: upstream said no")
	require.Empty(t, client.Code(errors.New("plain")))
}
