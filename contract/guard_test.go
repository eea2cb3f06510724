package contract_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
)

func TestGuard(t *testing.T) {
	onPanic := func(r any) contract.Result {
		return contract.Result{Text: fmt.Sprintf("internal error: %v", r), Status: "internal", IsError: true}
	}
	ok := contract.Guard(func() contract.Result { return contract.Result{Text: "fine", Status: "ok"} }, onPanic)
	require.Equal(t, contract.Result{Text: "fine", Status: "ok"}, ok)

	var nilMap map[string]int
	got := contract.Guard(func() contract.Result {
		nilMap["x"] = 1 // a runtime panic
		return contract.Result{Status: "ok"}
	}, onPanic)
	require.True(t, got.IsError)
	require.Equal(t, "internal", got.Status)
	require.Contains(t, got.Text, "assignment to entry in nil map")

	got = contract.Guard(func() contract.Result { panic("boom") }, onPanic)
	require.Equal(t, "internal error: boom", got.Text)
}
