package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
)

// batch is POST /api/v1/batches: many reservations of the caller in one
// request and one transaction, each exactly the single reservation under
// its own key. The answer is 200 with every item's status and body as
// POST /api/v1/reservations would answer it, in item order, or 409
// batch_refused for an atomic batch refused as a whole; a problem of the
// whole batch (media type, size, not the documented object) stores
// nothing and is answered as a problem.
func (s *Server) batch(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	body, err := readJSONBodyUpTo(w, r, api.MaxBatchBytes)
	if err != nil {
		return err
	}
	atomic, entries, err := api.DecodeBatch(body)
	if err != nil {
		return err
	}
	res, err := s.eng.Batch(r.Context(), who.Actor, entries, atomic)
	if err != nil {
		return err
	}
	failpoint.Hit(failpoint.ServerAfterCommit)
	s.metrics.observeBatch(len(entries))
	if !res.Refused {
		for _, it := range res.Items {
			if !it.Outcome.Replayed {
				s.metrics.countExpired(it.Outcome)
			}
		}
	}
	answer := api.BatchAnswer{Results: make([]api.BatchResult, len(res.Items))}
	for i, it := range res.Items {
		answer.Results[i] = batchResultOf(it)
	}
	info := infoOf(r)
	status := http.StatusOK
	if res.Refused {
		answer.Status, status = engine.CodeBatchRefused, http.StatusConflict
		info.outcome, info.code = engine.OutcomeRejected, engine.CodeBatchRefused
	}
	body = appendBatchAnswer(make([]byte, 0, 64+len(answer.Results)*192), answer)
	w.Header().Set("Content-Type", api.MediaJSON)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
	return nil
}

// appendBatchAnswer appends the JSON of a, each item's body byte for byte
// as the single reservation answers it (json.Marshal would compact a
// body that a store replays verbatim), and a line end.
func appendBatchAnswer(b []byte, a api.BatchAnswer) []byte {
	b = append(b, '{')
	if a.Status != "" {
		b = strconv.AppendQuote(append(b, `"status":`...), a.Status)
		b = append(b, ',')
	}
	b = append(b, `"results":[`...)
	for i, r := range a.Results {
		if i > 0 {
			b = append(b, ',')
		}
		key, _ := json.Marshal(r.Key)
		b = append(append(b, `{"key":`...), key...)
		b = strconv.AppendInt(append(b, `,"status":`...), int64(r.Status), 10)
		b = strconv.AppendBool(append(b, `,"replayed":`...), r.Replayed)
		b = append(append(append(b, `,"body":`...), r.Body...), '}')
	}
	return append(b, "]}\n"...)
}

// batchResultOf is one item's result as the single reservation would
// answer it: the answer and its status, or the problem of its refusal,
// which for an item of an atomic batch refused as a whole names its reason.
func batchResultOf(it engine.BatchItemResult) api.BatchResult {
	if it.Refusal != nil {
		code := engine.ErrorCode(it.Refusal)
		status := StatusOf(code)
		body := problemJSONWith(api.Problem{Status: status, Code: code, Detail: problemDetail(it.Refusal), Reason: it.Reason})
		return api.BatchResult{Key: string(it.Key), Status: status, Body: body}
	}
	a := it.Outcome.Answer
	return api.BatchResult{Key: string(it.Key), Status: StatusOfAnswer(a), Replayed: it.Outcome.Replayed, Body: a.JSON()}
}
