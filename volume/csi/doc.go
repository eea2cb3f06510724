// Package csi is vfsd's Kubernetes CSI driver: it serves the CSI v1
// Identity, Controller and Node services (the official bindings,
// github.com/container-storage-interface/spec) over a Unix socket, on top
// of a daemon.Daemon in the same process.
//
// A volume is a vfsd session. CreateVolume makes one: staged from host
// folders (StorageClass parameters: folders, include and exclude globs,
// policy, backend), or with a VolumeContentSource an O(1) fork of a
// snapshot or of another volume. CreateSnapshot is a vfsd snapshot
// (ready_to_use once pushed when the daemon has a remote), and builds the
// kernel overlay's metadata layer of its state ahead, so the forks of it
// mount without paying for it. NodePublishVolume mounts the session at
// the pod's target path, through the kernel overlay or FUSE
// (daemon.Daemon.Mount); a CSI ephemeral inline volume is a session of its
// own for the pod's life, made from the volume attributes.
//
// The driver runs the daemon in-process rather than calling a separate
// `vfsd serve`: the node plugin is the process whose mounts are the
// containers' volumes, one container runs one thing, and the daemon's
// restart story is the plugin's: overlay mounts outlive the process
// (killed, or shut down with daemon.Config.KeepMounts) and the restarted
// daemon takes them over; FUSE mounts die with it (see docs/volumes.md).
// The same process can serve vfsd's HTTP API on a socket (vfsd csi
// --socket), so tools, diffs, snapshots, the log and the review page reach
// the volumes' sessions.
//
// What the driver keeps of its own — which volume was created from which
// request, which is ephemeral — lives in small JSON records in
// Options.StateDir, written before the session they describe, so a
// request retried after a crash finds what the first attempt did.
package csi
