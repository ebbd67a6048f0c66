package daemon

// ClearTextWarning lets the tests find the warning about a listener that is
// not on loopback.
const ClearTextWarning = clearTextWarning
