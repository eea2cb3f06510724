// The MCP SDK's declarations name HeadersInit, a DOM type that Node's own
// types (the only library this package compiles against) call otherwise.
type HeadersInit = ConstructorParameters<typeof Headers>[0];
