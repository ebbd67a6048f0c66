package outbox

import "github.com/reserve/reserve/internal/engine"

// SetAfterDeliver installs a hook between delivering and marking an event.
func (d *Dispatcher) SetAfterDeliver(fn func(engine.Event) error) { d.afterDeliver = fn }
