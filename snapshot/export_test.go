package snapshot

// SetEagerLoad makes r load every snapshot whole, as before lazy loading:
// tests compare the two.
func SetEagerLoad(r *Repo, eager bool) { r.eager = eager }
