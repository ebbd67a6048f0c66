package daemon

// ClearTextWarning lets the tests find the warning about a listener that is
// not on loopback.
const ClearTextWarning = clearTextWarning

// HoldJanitor lets the tests run the hold janitor with a short period
// against an engine whose clock they move.
var HoldJanitor = holdJanitor

// ConfigSources lets the tests apply an environment of their own to the
// flags of serve.
var ConfigSources = configSources
