package bench

// WithAfterRequest returns cfg with a hook that runs after every request,
// so tests can disturb a run.
func WithAfterRequest(cfg Config, f func()) Config {
	cfg.afterRequest = f
	return cfg
}
