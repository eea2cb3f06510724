package contracttest

import (
	"context"

	"github.com/vfsd/vfsd/vfs"
)

// SessionFiles returns every file of s as path → content (symlinks as
// "-> target"), directories as "path/".
func SessionFiles(ctx context.Context, s *vfs.Session) (map[string]string, error) {
	out := map[string]string{}
	err := s.Walk(ctx, vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if p == vfs.Root {
			return nil
		}
		switch {
		case n.IsDir():
			out[p.String()+"/"] = ""
		case n.IsSymlink():
			out[p.String()] = "-> " + n.Target
		default:
			b, _, err := s.ReadFile(ctx, p)
			if err != nil {
				return err
			}
			out[p.String()] = string(b)
		}
		return nil
	})
	return out, err
}
