package api

// PushReport answers POST /v1/snapshots/{snap}/push: what uploading a
// snapshot to the daemon's remote did.
type PushReport struct {
	Snapshot      string `json:"snapshot"`
	Blobs         int    `json:"blobs"`          // blobs the snapshot needs
	Records       int    `json:"records"`        // records it needs: its own and those holding its manifests
	Uploaded      int    `json:"uploaded"`       // objects sent now
	UploadedBlobs int    `json:"uploaded_blobs"` // blobs among them
	UploadedBytes int64  `json:"uploaded_bytes"`
	// UploadedManifests is how many directory manifests the uploaded
	// records hold (a record packs the manifests its snapshot first wrote).
	UploadedManifests int `json:"uploaded_manifests"`
	Present           int `json:"present"` // objects the remote had already
	// Verified counts objects the remote had, not known good here (another
	// daemon stored them), that the push read back and found right;
	// Repaired, those it found wrong (another party wrote something else
	// under the name) and overwrote; Rewritten, those over 8 MiB it
	// overwrote unread; Unrepaired, blobs of the wrong size this daemon
	// cannot repair, not having them (the daemon that has them does, by
	// pushing again).
	Verified   int `json:"verified"`
	Repaired   int `json:"repaired"`
	Rewritten  int `json:"rewritten"`
	Unrepaired int `json:"unrepaired"`
	// UploadedPacks counts the packs among the objects uploaded: small
	// blobs go in packs, counted in UploadedBlobs too.
	UploadedPacks int `json:"uploaded_packs"`
	// UploadedRecords counts the snapshot records among them.
	UploadedRecords int     `json:"uploaded_records"`
	DurationMs      float64 `json:"duration_ms"`
}

// RemoteStatus answers GET /v1/remote: the daemon's remote, its pushes and
// its local cache of fetched blobs.
type RemoteStatus struct {
	URL        string   `json:"url,omitempty"` // "" when the daemon has no remote
	Pending    []string `json:"pending"`       // snapshots waiting to be pushed
	LastPush   string   `json:"last_push,omitempty"`
	LastError  string   `json:"last_error,omitempty"`
	CacheBlobs int      `json:"cache_blobs"` // fetched blobs kept locally
	CacheBytes int64    `json:"cache_bytes"`
	CacheLimit int64    `json:"cache_limit"`
	Fetched    int64    `json:"fetched"`  // objects fetched since the daemon started
	Uploaded   int64    `json:"uploaded"` // objects uploaded since the daemon started
	// LastPushReport is what the last background push did (the push a
	// snapshot queues when it is taken); absent before the first.
	LastPushReport *PushReport `json:"last_push_report,omitempty"`
}

// RemoteGCReport answers POST /v1/remote/gc: what a garbage collection of
// the shared remote did.
type RemoteGCReport struct {
	Snapshots    int   `json:"snapshots"` // snapshot records in the remote (never deleted by GC)
	Marked       int   `json:"marked"`    // blobs they reference
	Scanned      int   `json:"scanned"`   // blobs in the remote
	Deleted      int   `json:"deleted"`
	DeletedBytes int64 `json:"deleted_bytes"`
	Young        int   `json:"young"` // unreferenced but within the grace period: kept
	Packs        int   `json:"packs"` // manifest packs in the remote
	// Skipped counts objects under the records' prefix the collection
	// could not use (another party's, corrupt, too large) and manifests
	// that do not match their hash; SkippedWhy tells the first ten.
	Skipped    int      `json:"skipped"`
	SkippedWhy []string `json:"skipped_why,omitempty"`
	// DeleteFailed counts unreferenced blobs the remote refused to delete
	// (an object lock, a deny policy); DeleteError is the first refusal.
	DeleteFailed int    `json:"delete_failed"`
	DeleteError  string `json:"delete_error,omitempty"`
	// BlobPacks counts the packs of blobs in the remote (their blobs count
	// in Scanned, Deleted and Young too); PacksDeleted, those deleted
	// whole; PacksRepacked, those whose referenced blobs were copied to
	// new packs before they were deleted (they held unreferenced blobs
	// past the grace period, or were small packs merged).
	BlobPacks     int     `json:"blob_packs"`
	PacksDeleted  int     `json:"packs_deleted"`
	PacksRepacked int     `json:"packs_repacked"`
	GraceS        float64 `json:"grace_s"`
	DurationMs    float64 `json:"duration_ms"`
}
