package engine

// ErrPingPending is Ping's cause while an earlier read still waits.
var ErrPingPending = errPingPending
