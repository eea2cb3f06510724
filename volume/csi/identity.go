package csi

import (
	"context"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// GetPluginInfo names the driver and its version.
func (drv *Driver) GetPluginInfo(ctx context.Context, req *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	v := drv.opts.Version
	if v == "" {
		v = "dev"
	}
	return &csipb.GetPluginInfoResponse{Name: drv.opts.Name, VendorVersion: v}, nil
}

// GetPluginCapabilities: a controller service, and volumes that live on
// one node (the one whose daemon holds the session).
func (drv *Driver) GetPluginCapabilities(ctx context.Context, req *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	svc := func(t csipb.PluginCapability_Service_Type) *csipb.PluginCapability {
		return &csipb.PluginCapability{Type: &csipb.PluginCapability_Service_{Service: &csipb.PluginCapability_Service{Type: t}}}
	}
	return &csipb.GetPluginCapabilitiesResponse{Capabilities: []*csipb.PluginCapability{
		svc(csipb.PluginCapability_Service_CONTROLLER_SERVICE),
		svc(csipb.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
	}}, nil
}

// Probe answers ready while the daemon serves.
func (drv *Driver) Probe(ctx context.Context, req *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	select {
	case <-drv.d.Stopping():
		return &csipb.ProbeResponse{Ready: wrapperspb.Bool(false)}, nil
	default:
	}
	return &csipb.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// topology is where this driver's volumes are accessible from.
func (drv *Driver) topology() []*csipb.Topology {
	return []*csipb.Topology{{Segments: map[string]string{TopologyKey: drv.opts.NodeID}}}
}
