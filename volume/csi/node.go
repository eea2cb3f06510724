package csi

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vfsd/vfsd/api"
)

// NodeGetCapabilities: volume statistics (no staging: a
// volume is mounted at each pod's target directly).
func (drv *Driver) NodeGetCapabilities(ctx context.Context, req *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	var caps []*csipb.NodeServiceCapability
	for _, t := range []csipb.NodeServiceCapability_RPC_Type{
		csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS,
	} {
		caps = append(caps, &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{
			Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}})
	}
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// NodeGetInfo names the node and its topology segment.
func (drv *Driver) NodeGetInfo(ctx context.Context, req *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return &csipb.NodeGetInfoResponse{NodeId: drv.opts.NodeID,
		AccessibleTopology: drv.topology()[0]}, nil
}

// NodePublishVolume mounts the volume's session at the target path
// (creating the directory): read-only when asked, nosuid and nodev always.
// An inline ephemeral volume (csi.storage.k8s.io/ephemeral=true in the
// volume context) gets its session first, made from its attributes. The
// same call again is a success; the volume at the same target with
// another read-only flag is already_exists.
func (drv *Driver) NodePublishVolume(ctx context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	vol, target := req.GetVolumeId(), req.GetTargetPath()
	if vol == "" {
		return nil, invalid("NodePublishVolume: volume_id is required")
	}
	if target == "" {
		return nil, invalid("NodePublishVolume %s: target_path is required", vol)
	}
	if req.GetVolumeCapability() == nil {
		return nil, invalid("NodePublishVolume %s: volume_capability is required", vol)
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, invalid("NodePublishVolume %s: %v", vol, err)
	}
	if _, err := drv.targetRel(target); err != nil {
		return nil, invalid("NodePublishVolume %s: %v", vol, err)
	}
	target = filepath.Clean(target)
	readOnly := req.GetReadonly() || readOnlyMount(req.GetVolumeCapability())
	vctx := req.GetVolumeContext()
	ephemeral := vctx[keyEphemeral] == "true"

	unlockTarget := drv.targets.lock(target)
	defer unlockTarget()
	id := vol
	var created *volumeRecord
	if ephemeral {
		var err error
		if id, created, err = drv.ensureInline(ctx, vol, target, vctx); err != nil {
			return nil, err
		}
	}
	rec, err := drv.recs.get(id)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", vol, err)
	}
	s, err := drv.d.Session(ctx, id)
	if err != nil {
		return nil, grpcErr(err, "NodePublishVolume %s", vol)
	}
	for _, fm := range s.FuseMounts {
		if fm.Dir != target {
			continue
		}
		if fm.ReadOnly != readOnly {
			return nil, status.Errorf(codes.AlreadyExists, "NodePublishVolume %s: published at %s already with readonly=%v", vol, target, fm.ReadOnly)
		}
		return &csipb.NodePublishVolumeResponse{}, nil // done already
	}
	backend := drv.opts.DefaultBackend
	switch {
	case rec != nil:
		backend = rec.Params.Backend
	case vctx[ParamBackend] != "":
		backend = vctx[ParamBackend] // a statically provisioned volume's attribute
	}
	start := time.Now()
	ctx = context.WithoutCancel(ctx) // a mount is not left half made when the kubelet gives up waiting
	err = drv.mountAt(ctx, id, target, api.MountRequest{Dir: target, ReadOnly: readOnly, Backend: backend,
		AllowOther: true})
	if err != nil {
		if created != nil { // a failed publish leaves no inline session behind
			drv.dropInline(ctx, created)
		}
		return nil, err
	}
	drv.log.Info("csi volume published", "volume", id, "target", target, "readonly", readOnly, "backend", backend,
		"inline", ephemeral, "ms", time.Since(start).Milliseconds())
	return &csipb.NodePublishVolumeResponse{}, nil
}

// mountAt creates the target directory beneath the target root and mounts
// session id there.
func (drv *Driver) mountAt(ctx context.Context, id, target string, req api.MountRequest) error {
	made, err := drv.makeTarget(target)
	if err != nil {
		return status.Errorf(codes.Internal, "NodePublishVolume %s: the target %s: %v", id, target, err)
	}
	if req.Backend == api.BackendFUSE || req.Backend == "" {
		// FUSE: other users (the containers' uids) reach the mount, the
		// kernel checking their permissions (default_permissions).
		req.AllowOther = true
	} else {
		req.AllowOther = false // the kernel overlay has no such option; auto may choose it
	}
	if req.Backend == api.BackendAuto {
		req.AllowOther = true // FUSE if auto falls back to it; the overlay ignores it
	}
	if _, err := drv.d.Mount(ctx, id, req); err != nil {
		if made {
			_ = drv.removeTarget(target)
		}
		return grpcErr(err, "NodePublishVolume %s at %s", id, target)
	}
	return nil
}

// ensureInline makes the session of an inline ephemeral volume (kubelet's
// handle vol) from its attributes, unless it exists; it returns the
// session's ID and, when made now, its record.
func (drv *Driver) ensureInline(ctx context.Context, vol, target string, vctx map[string]string) (string, *volumeRecord, error) {
	id := sessionID(vol)
	unlock := drv.names.lock(id)
	defer unlock()
	p, err := parseParams(vctx, forInline, drv.opts.DefaultBackend)
	if err != nil {
		return "", nil, invalid("NodePublishVolume %s (inline): %v", vol, err)
	}
	if len(p.Folders) > 0 && !drv.opts.InlineFolders {
		return "", nil, status.Errorf(codes.PermissionDenied, "NodePublishVolume %s (inline): this driver does not stage host folders into inline volumes, whose attributes any pod author writes; use a StorageClass, fork a snapshot (%s), or start vfsd csi with --inline-folders", vol, ParamSnapshot)
	}
	old, err := drv.recs.get(id)
	if err != nil {
		return "", nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", vol, err)
	}
	_, serr := drv.d.Session(ctx, id)
	switch {
	case old != nil && !old.Ephemeral:
		return "", nil, status.Errorf(codes.AlreadyExists, "NodePublishVolume %s: %s is a persistent volume, not an inline one", vol, id)
	case old != nil && old.Target != target:
		return "", nil, status.Errorf(codes.AlreadyExists, "NodePublishVolume %s: the inline volume is published at %s; one inline volume serves one pod", vol, old.Target)
	case old != nil && serr == nil:
		return id, nil, nil
	case old == nil && serr == nil:
		return "", nil, status.Errorf(codes.AlreadyExists, "NodePublishVolume %s: a vfsd session %s exists that is not this inline volume's", vol, id)
	case serr != nil && !isCode(serr, api.CodeNotFound):
		return "", nil, grpcErr(serr, "NodePublishVolume %s", vol)
	}
	ctx = context.WithoutCancel(ctx) // as CreateVolume: a retry finds it done
	rec := &volumeRecord{ID: id, Name: vol, Ephemeral: true, Params: p, Target: target, Created: time.Now().UTC()}
	if err := drv.recs.put(rec); err != nil {
		return "", nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", vol, err)
	}
	if err := drv.createSession(ctx, rec); err != nil {
		_ = drv.recs.remove(id)
		return "", nil, grpcErr(err, "NodePublishVolume %s (inline)", vol)
	}
	drv.log.Info("csi inline volume created", "volume", id, "handle", vol, "snapshot", p.Snapshot, "folders", len(p.Folders))
	return id, rec, nil
}

// dropInline closes an inline volume's session and forgets it.
func (drv *Driver) dropInline(ctx context.Context, rec *volumeRecord) {
	purge := true // its snapshots were the pod's
	if err := drv.d.CloseSession(ctx, rec.ID, &purge); err != nil && !isCode(err, api.CodeNotFound) {
		drv.log.Warn("csi: close an inline volume's session", "volume", rec.ID, "err", err)
		return
	}
	if err := drv.recs.remove(rec.ID); err != nil {
		drv.log.Warn("csi: forget an inline volume", "volume", rec.ID, "err", err)
	}
}

// NodeUnpublishVolume unmounts the volume at the target (what the mount
// acknowledged is in the session first) and removes the directory; an
// inline volume's session is closed with it. Nothing mounted there is
// success: the call is idempotent.
func (drv *Driver) NodeUnpublishVolume(ctx context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	vol, target := req.GetVolumeId(), req.GetTargetPath()
	if vol == "" {
		return nil, invalid("NodeUnpublishVolume: volume_id is required")
	}
	if target == "" {
		return nil, invalid("NodeUnpublishVolume %s: target_path is required", vol)
	}
	if _, err := drv.targetRel(target); err != nil {
		return nil, invalid("NodeUnpublishVolume %s: %v", vol, err)
	}
	target = filepath.Clean(target)
	unlockTarget := drv.targets.lock(target)
	defer unlockTarget()
	id := vol
	rec, err := drv.recs.get(id)
	if err == nil && rec == nil {
		if r2, err2 := drv.recs.get(sessionID(vol)); err2 == nil && r2 != nil && r2.Ephemeral {
			id, rec = r2.ID, r2
		}
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "NodeUnpublishVolume %s: %v", vol, err)
	}
	if s, err := drv.d.Session(ctx, id); err == nil {
		for _, fm := range s.FuseMounts {
			if fm.Dir == target {
				if err := drv.d.Unmount(ctx, id, target); err != nil && !isCode(err, api.CodeNotFound) {
					return nil, grpcErr(err, "NodeUnpublishVolume %s at %s", vol, target)
				}
			}
		}
	} else if !isCode(err, api.CodeNotFound) {
		return nil, grpcErr(err, "NodeUnpublishVolume %s", vol)
	}
	if err := drv.removeTarget(target); err != nil {
		return nil, status.Errorf(codes.Internal, "NodeUnpublishVolume %s: remove %s: %v", vol, target, err)
	}
	if rec != nil && rec.Ephemeral && rec.Target == target {
		drv.dropInline(ctx, rec)
	}
	drv.log.Info("csi volume unpublished", "volume", id, "target", target)
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// NodeGetVolumeStats reports a published volume's use against its quota
// (bytes, and files as inodes); failed_precondition when the mount at the
// path is not served (a FUSE mount whose server died: pods using it must
// be restarted).
func (drv *Driver) NodeGetVolumeStats(ctx context.Context, req *csipb.NodeGetVolumeStatsRequest) (*csipb.NodeGetVolumeStatsResponse, error) {
	vol, p := req.GetVolumeId(), req.GetVolumePath()
	if vol == "" {
		return nil, invalid("NodeGetVolumeStats: volume_id is required")
	}
	if p == "" {
		return nil, invalid("NodeGetVolumeStats %s: volume_path is required", vol)
	}
	id := vol
	if rec, err := drv.recs.get(sessionID(vol)); err == nil && rec != nil && rec.Ephemeral {
		id = rec.ID
	}
	s, err := drv.d.Session(ctx, id)
	if err != nil {
		return nil, grpcErr(err, "NodeGetVolumeStats %s", vol)
	}
	p = filepath.Clean(p)
	published := false
	for _, fm := range s.FuseMounts {
		published = published || fm.Dir == p
	}
	if !published {
		return nil, status.Errorf(codes.NotFound, "NodeGetVolumeStats %s: the volume is not published at %s", vol, p)
	}
	var q api.Quota
	if s.Quota != nil {
		q = *s.Quota
	}
	bytes := &csipb.VolumeUsage{Unit: csipb.VolumeUsage_BYTES, Used: s.Bytes}
	if q.MaxBytes > 0 {
		bytes.Total, bytes.Available = q.MaxBytes, max(q.MaxBytes-s.Bytes, 0)
	}
	inodes := &csipb.VolumeUsage{Unit: csipb.VolumeUsage_INODES, Used: s.Files}
	if q.MaxFiles > 0 {
		inodes.Total, inodes.Available = q.MaxFiles, max(q.MaxFiles-s.Files, 0)
	}
	if err := servedAt(p); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "NodeGetVolumeStats %s: the mount at %s is not served (%v): a FUSE volume whose server restarted; restart the pods using it", vol, p, err)
	}
	return &csipb.NodeGetVolumeStatsResponse{Usage: []*csipb.VolumeUsage{bytes, inodes}}, nil
}

// targetRel checks that target is an absolute, clean path beneath the
// target root, and returns it relative to the root.
func (drv *Driver) targetRel(target string) (string, error) {
	if !filepath.IsAbs(target) {
		return "", fmt.Errorf("target path %q is not absolute", target)
	}
	clean := filepath.Clean(target)
	rel, err := filepath.Rel(drv.opts.TargetRoot, clean)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("target path %s is not beneath %s, where this driver publishes (vfsd csi --kubelet-dir)", target, drv.opts.TargetRoot)
	}
	return rel, nil
}
