package server

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// faultState holds the armed answer faults. Receipt-write faults live in
// the engine, because they must fail inside the transaction.
type faultState struct {
	mu      sync.Mutex
	garble  int
	delays  int
	delayMS int
}

// take consumes the faults for one reservation answer.
func (f *faultState) take() (garble bool, delay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.delays > 0 {
		f.delays--
		delay = time.Duration(f.delayMS) * time.Millisecond
	}
	if f.garble > 0 {
		f.garble--
		garble = true
	}
	return garble, delay
}

// armFault is POST /api/v1/debug/faults.
func (s *Server) armFault(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	f, err := decodeBody(w, r, api.DecodeFault)
	if err != nil {
		return err
	}
	switch f.Fault {
	case api.FaultFailReceiptWrite:
		s.eng.Faults().FailReceiptWrites(f.Count)
	case api.FaultGarbleResponse:
		s.faults.mu.Lock()
		s.faults.garble += f.Count
		s.faults.mu.Unlock()
	case api.FaultDelayResponse:
		s.faults.mu.Lock()
		s.faults.delays += f.Count
		s.faults.delayMS = f.DelayMS
		s.faults.mu.Unlock()
	}
	infoOf(r).fault = f.Fault
	s.log.Warn("fault armed", slog.String("fault", f.Fault), slog.Int("count", f.Count), slog.Int("delay_ms", f.DelayMS))
	return writeJSON(w, http.StatusOK, f)
}

// HoldingMessage is logged, with the operation key, when a delay_response
// fault starts to hold a committed answer.
const HoldingMessage = "fault injection: holding a committed answer"

// applyFaults runs after the outcome is committed. A delay holds the answer
// (until the client gives up or the server shuts down); a garble sends a 200
// whose body is not JSON. It reports whether the real answer should still be
// written.
func (s *Server) applyFaults(w http.ResponseWriter, r *http.Request, out engine.Outcome) bool {
	garble, delay := s.faults.take()
	info := infoOf(r)
	if delay > 0 {
		info.fault = api.FaultDelayResponse
		s.log.Warn(HoldingMessage, slog.String("operation", info.opKey), slog.Duration("delay", delay))
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return false
		case <-s.stopping:
		}
	}
	if garble {
		info.fault = api.FaultGarbleResponse
		w.Header().Set("Content-Type", api.MediaJSON)
		w.WriteHeader(http.StatusOK)
		w.Write(append(out.Body[:len(out.Body)/2:len(out.Body)/2], "<garbled by fault injection>"...))
		return false
	}
	return true
}
