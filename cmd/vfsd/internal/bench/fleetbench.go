package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/vfsd/vfsd/api"
)

// FleetResult is the fleet's part of `vfsd bench remote` (docs/fleets.md),
// each figure against the obvious alternative measured in the same round,
// in alternating order, medians of the rounds.
type FleetResult struct {
	// HandoffFirstCallMs is a hand-off of the whole workspace (one file
	// changed) from daemon A to daemon B, from the end of the move (the
	// push done, the owner record rewritten) to the first answered
	// read_file on B: B reads the record, takes the lease, forks the head
	// lazily and reads.
	HandoffFirstCallMs float64 `json:"handoff_first_call_ms"`
	// HandoffMoveMs is the move call itself on A: freeze, snapshot, push
	// (one blob and the changed manifests), compare-and-swap.
	HandoffMoveMs float64 `json:"handoff_move_ms"`
	// HandoffTotalMs is the two together; ManualHandoffMs the same
	// outcome done by hand: snapshot on A, push, fork by full ID on B,
	// first read on B, close on A (with no ownership: nothing stops A
	// from writing on).
	HandoffTotalMs  float64 `json:"handoff_total_ms"`
	ManualHandoffMs float64 `json:"manual_handoff_ms"`
	HandoffVsManual float64 `json:"handoff_vs_manual"`
	// RefMoveMs is one ref move through the API, a round trip of the
	// client (GET of the ref, conditional PUT); RefPutBaselineMs one
	// unconditional PutObject of an object of the same size through
	// minio-go: what a ref without compare-and-swap would cost.
	RefMoveMs        float64 `json:"ref_move_ms"`
	RefPutBaselineMs float64 `json:"ref_put_baseline_ms"`
}

// fleetRound is one round's fleet measurements.
type fleetRound struct {
	handoffFirst, handoffMove, manual, refMove, refPut time.Duration
}

// fleetOnce measures the fleet's operations between daemons a and b, which
// share remote; ws is a's session of the whole workspace and file one of
// its files.
func fleetOnce(ctx context.Context, a, b *benchDaemon, remote, ws, file string, round int) (fleetRound, error) {
	var fr fleetRound
	bl, err := b.c.Daemons(ctx)
	if err != nil {
		return fr, fmt.Errorf("daemon list: %w", err)
	}
	to := bl.Self
	// Two sessions of the whole workspace on A, one change each.
	for _, id := range []string{"h", "m"} {
		id := fmt.Sprintf("%s%d", id, round)
		if _, err := a.c.ForkSession(ctx, ws, api.CreateSessionRequest{ID: id}); err != nil {
			return fr, fmt.Errorf("fork on A: %w", err)
		}
		params, _ := json.Marshal(map[string]any{"path": "changed-" + id, "content": "one change\n"})
		if r, err := a.c.CallTool(ctx, id, "write_file", params); err != nil || r.Status != "ok" {
			return fr, fmt.Errorf("write on A: %v", err)
		}
	}
	h, m := fmt.Sprintf("h%d", round), fmt.Sprintf("m%d", round)
	handoff := func() error {
		t := time.Now()
		if _, err := a.c.MoveSession(ctx, h, to); err != nil {
			return fmt.Errorf("move: %w", err)
		}
		fr.handoffMove = time.Since(t)
		t = time.Now()
		if _, err := readInline(ctx, b.c, h, file); err != nil {
			return fmt.Errorf("first call after the hand-off: %w", err)
		}
		fr.handoffFirst = time.Since(t)
		return nil
	}
	manual := func() error {
		t := time.Now()
		snap, err := a.c.CreateSnapshot(ctx, m, "manual hand-off")
		if err != nil {
			return err
		}
		if _, err := a.c.PushSnapshot(ctx, snap.ID); err != nil {
			return err
		}
		if _, err := b.c.ForkSnapshot(ctx, snap.ID, api.CreateSessionRequest{ID: m + "-b"}); err != nil {
			return err
		}
		if _, err := readInline(ctx, b.c, m+"-b", file); err != nil {
			return err
		}
		if err := a.c.CloseSession(ctx, m); err != nil {
			return err
		}
		fr.manual = time.Since(t)
		return nil
	}
	steps := []func() error{handoff, manual}
	if round%2 == 1 {
		steps = []func() error{manual, handoff}
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return fr, err
		}
	}

	// Ref moves against plain PutObjects of the same size, interleaved.
	snaps, err := a.c.SnapshotsOf(ctx, "", true)
	if err != nil || len(snaps) < 2 {
		return fr, fmt.Errorf("snapshots on A: %v (%d)", err, len(snaps))
	}
	c, cfg, err := baselineClient(remote)
	if err != nil {
		return fr, err
	}
	ref := fmt.Sprintf("bench/r%d", round)
	if _, err := a.c.SetRef(ctx, ref, api.RefRequest{Snapshot: snaps[0].ID}); err != nil { // pushes it, if need be
		return fr, fmt.Errorf("ref: %w", err)
	}
	if _, err := a.c.SetRef(ctx, ref, api.RefRequest{Snapshot: snaps[1].ID}); err != nil {
		return fr, fmt.Errorf("ref: %w", err)
	}
	r, err := a.c.Ref(ctx, ref)
	if err != nil {
		return fr, err
	}
	body, _ := json.Marshal(r)
	var moves, puts []time.Duration
	for i := range 20 {
		t := time.Now()
		if _, err := a.c.SetRef(ctx, ref, api.RefRequest{Snapshot: snaps[i%2].ID}); err != nil {
			return fr, fmt.Errorf("ref move: %w", err)
		}
		moves = append(moves, time.Since(t))
		t = time.Now()
		if _, err := c.PutObject(ctx, cfg.Bucket, path.Join(cfg.Prefix, "baseline-ref"), bytes.NewReader(body), int64(len(body)),
			minio.PutObjectOptions{ContentType: "application/json", DisableMultipart: true}); err != nil {
			return fr, fmt.Errorf("baseline put: %w", err)
		}
		puts = append(puts, time.Since(t))
	}
	fr.refMove, fr.refPut = medianDur(moves), medianDur(puts)
	return fr, nil
}

// fleetResult is the medians of the rounds.
func fleetResult(rounds []fleetRound) FleetResult {
	med := func(f func(fleetRound) time.Duration) time.Duration {
		ds := make([]time.Duration, len(rounds))
		for i, r := range rounds {
			ds[i] = f(r)
		}
		return medianDur(ds)
	}
	total := med(func(r fleetRound) time.Duration { return r.handoffMove + r.handoffFirst })
	manual := med(func(r fleetRound) time.Duration { return r.manual })
	return FleetResult{
		HandoffFirstCallMs: ms(med(func(r fleetRound) time.Duration { return r.handoffFirst })),
		HandoffMoveMs:      ms(med(func(r fleetRound) time.Duration { return r.handoffMove })),
		HandoffTotalMs:     ms(total), ManualHandoffMs: ms(manual), HandoffVsManual: ratio(total, manual),
		RefMoveMs:        ms(med(func(r fleetRound) time.Duration { return r.refMove })),
		RefPutBaselineMs: ms(med(func(r fleetRound) time.Duration { return r.refPut })),
	}
}
