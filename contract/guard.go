package contract

// Guard runs call and returns its result; if call panics, it returns
// onPanic's result for the recovered value instead. Every contract's Call
// runs its body through Guard, so that a call never panics into the daemon
// or the MCP server whatever its parameters: a panic becomes the
// contract's own internal-error result, in its document's words.
func Guard(call func() Result, onPanic func(recovered any) Result) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = onPanic(r)
		}
	}()
	return call()
}
