// Package weborigin parses the origins of web pages (scheme://host[:port])
// that the daemon compares against the Origin header of browser requests.
package weborigin

import (
	"fmt"
	"net/url"
	"strings"
)

// Normalize checks that o is an origin, scheme://host[:port] with scheme
// http or https, and returns it in lower case.
func Normalize(o string) (string, error) {
	u, err := url.Parse(strings.ToLower(strings.TrimSpace(o)))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not an origin: use scheme://host[:port], with scheme http or https", o)
	}
	return u.Scheme + "://" + u.Host, nil
}
