package server

import (
	"log/slog"
	"net/http"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// Faults is fault injection (internal/faults): faults that POST
// /api/v1/debug/faults arms, a middleware that applies the answer faults,
// and Release, which Shutdown calls to let held answers go.
type Faults interface {
	Arm(api.Fault)
	Answers(http.Handler) http.Handler
	Release()
}

// armFault is POST /api/v1/debug/faults.
func (s *Server) armFault(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	f, err := decodeBody(w, r, api.DecodeFault)
	if err != nil {
		return err
	}
	s.faultInjection.Arm(f)
	infoOf(r).fault = f.Fault
	s.log.Warn("fault armed", slog.String("fault", f.Fault), slog.Int("count", f.Count), slog.Int("delay_ms", f.DelayMS))
	return writeJSON(w, http.StatusOK, f)
}
