package csi

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/mount/overlay"
)

// snapshotLabel is the label of the vfsd snapshot CreateSnapshot takes
// for a snapshot name: how a repeated CreateSnapshot finds it, and how
// ListSnapshots tells the driver's snapshots from the others.
const snapshotLabelPrefix = "csi snapshot "

// ControllerGetCapabilities: volumes, clones, snapshots, and listing both.
func (drv *Driver) ControllerGetCapabilities(ctx context.Context, req *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	var caps []*csipb.ControllerServiceCapability
	for _, t := range []csipb.ControllerServiceCapability_RPC_Type{
		csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csipb.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csipb.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csipb.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csipb.ControllerServiceCapability_RPC_LIST_VOLUMES,
		csipb.ControllerServiceCapability_RPC_GET_SNAPSHOT,
	} {
		caps = append(caps, &csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{
			Rpc: &csipb.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csipb.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// CreateVolume makes a volume: a new session staged from the
// StorageClass's folders, or an O(1) fork of the snapshot or volume the
// content source names. The same name again answers the same volume, or
// already_exists when the request differs.
func (drv *Driver) CreateVolume(ctx context.Context, req *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	name := req.GetName()
	if name == "" {
		return nil, invalid("CreateVolume: name is required")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, invalid("CreateVolume %s: %v", name, err)
	}
	capacity, err := capacityOf(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	p, err := parseParams(req.GetParameters(), forStorageClass, drv.opts.DefaultBackend)
	if err != nil {
		return nil, invalid("CreateVolume %s: %v", name, err)
	}
	if err := drv.checkTopology(req.GetAccessibilityRequirements()); err != nil {
		return nil, err
	}
	rec := &volumeRecord{ID: sessionID(name), Name: name, Params: p, Capacity: capacity, Created: time.Now().UTC()}
	if src := req.GetVolumeContentSource(); src != nil {
		switch {
		case src.GetSnapshot() != nil:
			rec.FromSnapshot = src.GetSnapshot().GetSnapshotId()
			if !fullSnapshotID(rec.FromSnapshot) {
				return nil, status.Errorf(codes.NotFound, "CreateVolume %s: snapshot %q does not exist (a vfsd snapshot ID is 64 hex digits)", name, rec.FromSnapshot)
			}
		case src.GetVolume() != nil:
			rec.FromVolume = src.GetVolume().GetVolumeId()
			if rec.FromVolume == "" {
				return nil, invalid("CreateVolume %s: the volume content source names no volume", name)
			}
		default:
			return nil, invalid("CreateVolume %s: the content source names neither a snapshot nor a volume", name)
		}
		if len(p.Folders) > 0 {
			return nil, invalid("CreateVolume %s: a volume made from a snapshot or a volume starts from it: its StorageClass cannot stage %s too", name, ParamFolders)
		}
	}
	unlock := drv.names.lock(rec.ID)
	defer unlock()
	old, err := drv.recs.get(rec.ID)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "CreateVolume %s: %v", name, err)
	}
	_, serr := drv.d.Session(ctx, rec.ID)
	exists := serr == nil
	if serr != nil && !isCode(serr, api.CodeNotFound) {
		return nil, grpcErr(serr, "CreateVolume %s", name)
	}
	switch {
	case old != nil && old.Name != name:
		return nil, status.Errorf(codes.AlreadyExists, "CreateVolume %s: volume %s belongs to another name (%q)", name, rec.ID, old.Name)
	case old != nil && old.Ephemeral:
		return nil, status.Errorf(codes.AlreadyExists, "CreateVolume %s: %s is an inline volume of a pod", name, rec.ID)
	case old != nil && !sameRequest(old, rec):
		return nil, status.Errorf(codes.AlreadyExists, "CreateVolume %s: the volume exists with other parameters, capacity or source; delete it first or choose another name", name)
	case old != nil && exists:
		return drv.createResponse(old), nil // the same request again
	case old == nil && exists:
		return nil, status.Errorf(codes.AlreadyExists, "CreateVolume %s: a vfsd session %s exists that this driver did not create; choose another name", name, rec.ID)
	}
	if old != nil {
		rec = old // a crash after the record, before the session: finish it
	}
	// The record first: a retry after a crash finds what this attempt did.
	if err := drv.recs.put(rec); err != nil {
		return nil, status.Errorf(codes.Internal, "CreateVolume %s: %v", name, err)
	}
	// Staging a large folder can outlast the caller's deadline (the
	// provisioner's is 10 s by default): the creation goes on without it,
	// and the retry, waiting on the volume's lock, finds it done.
	ctx = context.WithoutCancel(ctx)
	if err := drv.createSession(ctx, rec); err != nil {
		_ = drv.recs.remove(rec.ID) // a failed creation leaves nothing behind
		return nil, grpcErr(err, "CreateVolume %s", name)
	}
	// The overlay's metadata layer of the volume's first state, built now
	// so that its publish does not pay for it (cached by state: a fork of
	// a snapshot CreateSnapshot prepared finds it built).
	if s, err := drv.d.Session(ctx, rec.ID); err == nil {
		if base := cmp.Or(s.Base, s.ImportSnapshot); base != "" {
			drv.prepareOverlay(ctx, rec.ID, base)
		}
	}
	drv.log.Info("csi volume created", "volume", rec.ID, "name", name, "from_snapshot", rec.FromSnapshot,
		"from_volume", rec.FromVolume, "folders", len(p.Folders), "backend", p.Backend)
	return drv.createResponse(rec), nil
}

// createSession makes rec's session.
func (drv *Driver) createSession(ctx context.Context, rec *volumeRecord) error {
	label := "csi volume " + rec.Name
	if rec.Ephemeral {
		label = "csi inline volume " + rec.Target
	}
	if len(label) > 512 {
		label = label[:512]
	}
	cr := api.CreateSessionRequest{ID: rec.ID, Policy: rec.Params.Policy, TTL: "never", Label: label}
	maxBytes := rec.Capacity
	if rec.Params.MaxBytes > 0 {
		maxBytes = rec.Params.MaxBytes
	}
	if maxBytes > 0 || rec.Params.MaxFiles > 0 {
		cr.Quota = &api.Quota{MaxBytes: maxBytes, MaxFiles: rec.Params.MaxFiles}
	}
	var err error
	switch {
	case rec.FromSnapshot != "":
		_, err = drv.d.ForkSnapshot(ctx, rec.FromSnapshot, cr)
	case rec.Params.Snapshot != "":
		_, err = drv.d.ForkSnapshot(ctx, rec.Params.Snapshot, cr)
	case rec.FromVolume != "":
		if _, serr := drv.d.Session(ctx, rec.FromVolume); serr != nil {
			return serr
		}
		_, err = drv.d.ForkSession(ctx, rec.FromVolume, cr)
	default:
		cr.Mounts = rec.Params.Folders
		_, err = drv.d.CreateSession(ctx, cr, nil)
	}
	return err
}

// sameRequest reports whether two records ask for the same volume.
func sameRequest(a, b *volumeRecord) bool {
	if a.Capacity != b.Capacity || a.FromSnapshot != b.FromSnapshot || a.FromVolume != b.FromVolume ||
		a.Params.Policy != b.Params.Policy || a.Params.Backend != b.Params.Backend ||
		a.Params.MaxFiles != b.Params.MaxFiles || len(a.Params.Folders) != len(b.Params.Folders) {
		return false
	}
	for i, f := range a.Params.Folders {
		g := b.Params.Folders[i]
		if f.HostPath != g.HostPath || f.MountPath != g.MountPath || f.Gitignore != g.Gitignore ||
			f.DefaultExcludes != g.DefaultExcludes || !slices.Equal(f.Include, g.Include) || !slices.Equal(f.Exclude, g.Exclude) {
			return false
		}
	}
	return true
}

// createResponse describes the volume rec.
func (drv *Driver) createResponse(rec *volumeRecord) *csipb.CreateVolumeResponse {
	v := &csipb.Volume{VolumeId: rec.ID, CapacityBytes: rec.Capacity,
		VolumeContext:      map[string]string{ParamBackend: rec.Params.Backend},
		AccessibleTopology: drv.topology()}
	switch {
	case rec.FromSnapshot != "":
		v.ContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
			Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: rec.FromSnapshot}}}
	case rec.FromVolume != "":
		v.ContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{
			Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: rec.FromVolume}}}
	}
	return &csipb.CreateVolumeResponse{Volume: v}
}

// capacityOf turns a capacity range into the volume's byte quota: the
// limit when there is one, else the required size; 0 (the daemon's
// default quota) when neither is given.
func capacityOf(r *csipb.CapacityRange) (int64, error) {
	req, lim := r.GetRequiredBytes(), r.GetLimitBytes()
	if req < 0 || lim < 0 {
		return 0, invalid("capacity_range: sizes cannot be negative")
	}
	if lim > 0 && req > lim {
		return 0, status.Errorf(codes.OutOfRange, "capacity_range: required_bytes %d is over limit_bytes %d", req, lim)
	}
	if lim > 0 {
		return lim, nil
	}
	return req, nil
}

// checkTopology refuses a volume that must be reachable from somewhere
// this node is not.
func (drv *Driver) checkTopology(tr *csipb.TopologyRequirement) error {
	if tr == nil || len(tr.GetRequisite()) == 0 {
		return nil
	}
	for _, t := range tr.GetRequisite() {
		if n, ok := t.GetSegments()[TopologyKey]; !ok || n == drv.opts.NodeID {
			return nil
		}
	}
	return status.Errorf(codes.ResourceExhausted, "the volume must be on one of the requisite topologies, and this driver is node %s: a vfsd volume lives on the node whose daemon creates it", drv.opts.NodeID)
}

// DeleteVolume closes the volume's session (the snapshots taken of it
// stay: they are VolumeSnapshots of their own). An unknown volume is
// deleted already; a mounted one is refused (failed_precondition) while
// pods use it.
func (drv *Driver) DeleteVolume(ctx context.Context, req *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, invalid("DeleteVolume: volume_id is required")
	}
	unlock := drv.names.lock(id)
	defer unlock()
	rec, err := drv.recs.get(id)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteVolume %s: %v", id, err)
	}
	if rec == nil {
		// Not the driver's: a session someone else made (a statically
		// provisioned volume) is not the driver's to close.
		if _, err := drv.d.Session(ctx, id); err == nil {
			drv.log.Info("csi: DeleteVolume of a session this driver did not create: left as it is", "volume", id)
		}
		return &csipb.DeleteVolumeResponse{}, nil
	}
	s, err := drv.d.Session(ctx, id)
	if err == nil && len(s.FuseMounts) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "DeleteVolume %s: the volume is still published at %s; unpublish it first", id, s.FuseMounts[0].Dir)
	}
	if err == nil {
		purge := false
		if err := drv.d.CloseSession(ctx, id, &purge); err != nil && !isCode(err, api.CodeNotFound) {
			return nil, grpcErr(err, "DeleteVolume %s", id)
		}
	} else if !isCode(err, api.CodeNotFound) {
		return nil, grpcErr(err, "DeleteVolume %s", id)
	}
	if err := drv.recs.remove(id); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteVolume %s: %v", id, err)
	}
	drv.log.Info("csi volume deleted", "volume", id)
	return &csipb.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities confirms the capabilities a volume serves.
func (drv *Driver) ValidateVolumeCapabilities(ctx context.Context, req *csipb.ValidateVolumeCapabilitiesRequest) (*csipb.ValidateVolumeCapabilitiesResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, invalid("ValidateVolumeCapabilities: volume_id is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, invalid("ValidateVolumeCapabilities %s: volume_capabilities is required", id)
	}
	if _, err := drv.d.Session(ctx, id); err != nil {
		return nil, grpcErr(err, "ValidateVolumeCapabilities %s", id)
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csipb.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	if _, err := parseParams(req.GetParameters(), forStorageClass, drv.opts.DefaultBackend); err != nil {
		return &csipb.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters: req.GetParameters()}}, nil
}

// CreateSnapshot takes a vfsd snapshot of the volume, labelled with the
// snapshot's name. It is ready to use at once, or, when the daemon has a
// remote, once it is pushed there (the snapshotter asks again). Where the
// kernel overlay serves the volume, the snapshot's metadata layer is built
// now, so the volumes forked from it mount without building it.
func (drv *Driver) CreateSnapshot(ctx context.Context, req *csipb.CreateSnapshotRequest) (*csipb.CreateSnapshotResponse, error) {
	name, src := req.GetName(), req.GetSourceVolumeId()
	if name == "" {
		return nil, invalid("CreateSnapshot: name is required")
	}
	if src == "" {
		return nil, invalid("CreateSnapshot %s: source_volume_id is required", name)
	}
	if len(req.GetParameters()) > 0 {
		for k := range req.GetParameters() {
			if !strings.HasPrefix(k, k8sPrefix) {
				return nil, invalid("CreateSnapshot %s: unknown parameter %q: a VolumeSnapshotClass takes none", name, k)
			}
		}
	}
	label := snapshotLabelPrefix + name
	unlock := drv.snapNames.lock(name)
	defer unlock()
	have, err := drv.snapshotByLabel(ctx, label)
	if err != nil {
		return nil, err
	}
	if have != nil {
		if have.Session != src {
			return nil, status.Errorf(codes.AlreadyExists, "CreateSnapshot %s: a snapshot of that name exists of volume %s, not %s", name, have.Session, src)
		}
		return &csipb.CreateSnapshotResponse{Snapshot: drv.csiSnapshot(ctx, have)}, nil
	}
	if _, err := drv.d.Session(ctx, src); err != nil {
		return nil, grpcErr(err, "CreateSnapshot %s of volume %s", name, src)
	}
	ctx = context.WithoutCancel(ctx) // as CreateVolume: a retry finds it done
	snap, err := drv.d.Snapshot(ctx, src, label, nil)
	if err != nil {
		return nil, grpcErr(err, "CreateSnapshot %s of volume %s", name, src)
	}
	drv.prepareOverlay(ctx, src, snap.ID)
	drv.log.Info("csi snapshot created", "snapshot", snap.ID, "name", name, "volume", src, "files", snap.Files)
	return &csipb.CreateSnapshotResponse{Snapshot: drv.csiSnapshot(ctx, snap)}, nil
}

// prepareOverlay builds the overlay metadata layer of snapshot id of
// volume vol, when the overlay will mount that volume's forks. A failure
// costs only speed: the mount builds the layer.
func (drv *Driver) prepareOverlay(ctx context.Context, vol, id string) {
	backend := drv.opts.DefaultBackend
	if rec, err := drv.recs.get(vol); err == nil && rec != nil {
		backend = rec.Params.Backend
	}
	if backend == api.BackendFUSE || overlay.Available() != nil {
		return
	}
	prep, err := drv.d.PrepareOverlay(ctx, id)
	if err != nil {
		drv.log.Warn("csi: build the snapshot's overlay metadata layer (its forks' first mount builds it instead)", "snapshot", id, "err", err)
		return
	}
	drv.log.Info("csi: overlay metadata layer ready", "snapshot", id, "cached", prep.Cached, "entries", prep.Entries, "ms", prep.Duration.Milliseconds())
}

// snapshotByLabel finds the snapshot labelled label, or nil.
func (drv *Driver) snapshotByLabel(ctx context.Context, label string) (*api.Snapshot, error) {
	all, err := drv.d.ListSnapshots(ctx, "", true)
	if err != nil {
		return nil, grpcErr(err, "list snapshots")
	}
	for i := range all.Snapshots {
		if all.Snapshots[i].Label == label {
			return &all.Snapshots[i], nil
		}
	}
	return nil, nil
}

// csiSnapshot describes a vfsd snapshot in CSI's terms.
func (drv *Driver) csiSnapshot(ctx context.Context, s *api.Snapshot) *csipb.Snapshot {
	ready := true
	if st := drv.d.RemoteStatus(ctx); st.URL != "" {
		ready = !slices.Contains(st.Pending, s.ID)
	}
	return &csipb.Snapshot{SnapshotId: s.ID, SourceVolumeId: s.Session, SizeBytes: s.Bytes,
		CreationTime: timestamppb.New(s.CreatedAt), ReadyToUse: ready}
}

// DeleteSnapshot deletes a vfsd snapshot; an unknown one is deleted
// already. The volumes forked from it keep their content.
func (drv *Driver) DeleteSnapshot(ctx context.Context, req *csipb.DeleteSnapshotRequest) (*csipb.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, invalid("DeleteSnapshot: snapshot_id is required")
	}
	if !fullSnapshotID(id) {
		return &csipb.DeleteSnapshotResponse{}, nil // no such snapshot; never a prefix of one
	}
	if _, err := drv.d.DeleteSnapshot(ctx, id); err != nil && !isCode(err, api.CodeNotFound) {
		return nil, grpcErr(err, "DeleteSnapshot %s", id)
	}
	drv.log.Info("csi snapshot deleted", "snapshot", id)
	return &csipb.DeleteSnapshotResponse{}, nil
}

// ListSnapshots lists the driver's snapshots (those CreateSnapshot took),
// oldest first, or the one snapshot_id names (any vfsd snapshot: a
// VolumeSnapshotContent may name one an agent took), or those of
// source_volume_id; max_entries at a time, starting_token being the index
// to go on from.
func (drv *Driver) ListSnapshots(ctx context.Context, req *csipb.ListSnapshotsRequest) (*csipb.ListSnapshotsResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, invalid("ListSnapshots: max_entries cannot be negative")
	}
	var list []api.Snapshot
	if id := req.GetSnapshotId(); id != "" {
		if fullSnapshotID(id) {
			s, err := drv.d.GetSnapshot(ctx, id)
			switch {
			case err == nil && s.ID == id:
				list = append(list, *s)
			case err != nil && !isCode(err, api.CodeNotFound):
				return nil, grpcErr(err, "ListSnapshots %s", id)
			}
		}
	} else {
		all, err := drv.d.ListSnapshots(ctx, "", true)
		if err != nil {
			return nil, grpcErr(err, "ListSnapshots")
		}
		for _, s := range all.Snapshots {
			if strings.HasPrefix(s.Label, snapshotLabelPrefix) {
				list = append(list, s)
			}
		}
		sort.SliceStable(list, func(i, j int) bool {
			if !list[i].CreatedAt.Equal(list[j].CreatedAt) {
				return list[i].CreatedAt.Before(list[j].CreatedAt)
			}
			return list[i].ID < list[j].ID
		})
	}
	if src := req.GetSourceVolumeId(); src != "" {
		list = slices.DeleteFunc(list, func(s api.Snapshot) bool { return s.Session != src })
	}
	start := 0
	if tok := req.GetStartingToken(); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(list) {
			return nil, status.Errorf(codes.Aborted, "ListSnapshots: starting_token %q is not one this driver gave; list again from the start", tok)
		}
		start = n
	}
	end := len(list)
	if m := int(req.GetMaxEntries()); m > 0 && start+m < end {
		end = start + m
	}
	resp := &csipb.ListSnapshotsResponse{}
	for i := start; i < end; i++ {
		resp.Entries = append(resp.Entries, &csipb.ListSnapshotsResponse_Entry{Snapshot: drv.csiSnapshot(ctx, &list[i])})
	}
	if end < len(list) {
		resp.NextToken = strconv.Itoa(end)
	}
	return resp, nil
}

// isCode reports whether err is an API error of code.
func isCode(err error, code string) bool {
	return errors.Is(err, &api.Error{Code: code})
}

// GetSnapshot describes the vfsd snapshot of that (full) ID.
func (drv *Driver) GetSnapshot(ctx context.Context, req *csipb.GetSnapshotRequest) (*csipb.GetSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, invalid("GetSnapshot: snapshot_id is required")
	}
	if !fullSnapshotID(id) {
		return nil, status.Errorf(codes.NotFound, "GetSnapshot: snapshot %q does not exist (a vfsd snapshot ID is 64 hex digits)", id)
	}
	s, err := drv.d.GetSnapshot(ctx, id)
	if err != nil {
		return nil, grpcErr(err, "GetSnapshot %s", id)
	}
	return &csipb.GetSnapshotResponse{Snapshot: drv.csiSnapshot(ctx, s)}, nil
}

// ListVolumes lists the persistent volumes the driver created, by ID,
// max_entries at a time, starting_token being the index to go on from.
func (drv *Driver) ListVolumes(ctx context.Context, req *csipb.ListVolumesRequest) (*csipb.ListVolumesResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, invalid("ListVolumes: max_entries cannot be negative")
	}
	recs, err := drv.recs.list()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "ListVolumes: %v", err)
	}
	recs = slices.DeleteFunc(recs, func(r *volumeRecord) bool {
		if r.Ephemeral {
			return true
		}
		_, err := drv.d.Session(ctx, r.ID)
		return err != nil // a record whose session is not made yet, or gone
	})
	start := 0
	if tok := req.GetStartingToken(); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(recs) {
			return nil, status.Errorf(codes.Aborted, "ListVolumes: starting_token %q is not one this driver gave; list again from the start", tok)
		}
		start = n
	}
	end := len(recs)
	if m := int(req.GetMaxEntries()); m > 0 && start+m < end {
		end = start + m
	}
	resp := &csipb.ListVolumesResponse{}
	for _, r := range recs[start:end] {
		resp.Entries = append(resp.Entries, &csipb.ListVolumesResponse_Entry{Volume: drv.createResponse(r).GetVolume()})
	}
	if end < len(recs) {
		resp.NextToken = strconv.Itoa(end)
	}
	return resp, nil
}
