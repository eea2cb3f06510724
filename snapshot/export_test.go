package snapshot

// SetEagerLoad makes r load every snapshot whole, as before lazy loading:
// tests compare the two.
func SetEagerLoad(r *Repo, eager bool) { r.eager = eager }

// SetEagerDefault makes repositories opened from now on load every
// snapshot whole (true) or lazily (false, the default).
func SetEagerDefault(eager bool) { eagerLoad = eager }
