package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// BatchItem is one reservation of a batch: the operation key it is made
// under, exactly as a single reservation would be, and its request.
type BatchItem struct {
	Key     engine.OperationKey
	Request engine.Request
}

// BatchReply is what the answer to a batch means. Exactly one of three
// holds: Items is set (the documented answer to exactly this batch,
// Decided), or Problem is set (the server refused or failed the whole
// batch; Decided says which), or neither (an answer that is not the
// documented one; never Decided). An undecided batch is sent again as the
// same batch, the same items under the same keys: every item the server
// had decided is replayed.
type BatchReply struct {
	Reply
	// Items are the items' results in order, each classified as the
	// answer to its single reservation (Classify).
	Items []Result
	// Refused reports an atomic batch refused as a whole: nothing was
	// stored for any item. An item replayed from its receipt carries that
	// answer (stored before), an item that caused the refusal its problem,
	// and every other item the problem batch_refused, with Decided false:
	// its operation is still open, and the same batch sent again later is
	// decided afresh.
	Refused bool
	Problem *engine.Error
	Decided bool
}

// ReserveBatch sends items as one batch (POST /api/v1/batches), atomic or
// not, and classifies the answer (BatchReply). The error is for no answer
// at all: the daemon unreachable (*ConnectError), the connection broken, a
// timeout; the batch is then undecided. An answer 429 rate_limited is sent
// again, the same batch, after its Retry-After while ctx allows
// (exchange).
func (c *Client) ReserveBatch(ctx context.Context, items []BatchItem, atomic bool) (BatchReply, error) {
	payload, err := EncodeBatch(items, atomic)
	if err != nil {
		return BatchReply{}, err
	}
	resp, data, err := c.exchange(ctx, http.MethodPost, api.PathBatches, nil, payload)
	if err != nil {
		return BatchReply{}, err
	}
	return ClassifyBatch(items, replyOf(resp, data)), nil
}

// EncodeBatch is the body of POST /api/v1/batches that sends items, atomic
// or not.
func EncodeBatch(items []BatchItem, atomic bool) ([]byte, error) {
	type item struct {
		Key      engine.OperationKey `json:"key"`
		Workshop string              `json:"workshop"`
		Quantity int                 `json:"quantity"`
		Waitlist bool                `json:"waitlist,omitempty"`
	}
	body := struct {
		Atomic bool   `json:"atomic"`
		Items  []item `json:"items"`
	}{Atomic: atomic, Items: make([]item, len(items))}
	for i, it := range items {
		body.Items[i] = item{it.Key, it.Request.Workshop, it.Request.Quantity, it.Request.Waitlist}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("batch: encode: %w", err)
	}
	return payload, nil
}

// ClassifyBatch is the rule of Classify for the answer to a batch of
// items: a JSON answer with a result for each item, in order, under its
// key, is the batch's answer, 200 decided item by item, 409 batch_refused
// refused as a whole; a problem is a problem of the whole batch, decided
// by the rule of Classify; anything else is undecided.
func ClassifyBatch(items []BatchItem, reply Reply) BatchReply {
	r := BatchReply{Reply: reply}
	r.Replayed = false
	switch mt, _, _ := mime.ParseMediaType(reply.ContentType); mt {
	case api.MediaJSON:
		var a api.BatchAnswer
		dec := json.NewDecoder(bytes.NewReader(reply.Body))
		dec.DisallowUnknownFields()
		if dec.Decode(&a) != nil || len(a.Results) != len(items) {
			return r
		}
		if _, err := dec.Token(); err != io.EOF {
			return r // Data after the answer.
		}
		var refused bool
		switch {
		case reply.Status == http.StatusOK && a.Status == "":
		case reply.Status == http.StatusConflict && a.Status == engine.CodeBatchRefused:
			refused = true
		default:
			return r
		}
		results := make([]Result, len(items))
		for i, res := range a.Results {
			if res.Key != string(items[i].Key) {
				return r
			}
			results[i] = classifyItem(items[i], res)
			if !results[i].Decided {
				return r
			}
			if refused {
				// Nothing of a refused batch was stored: only a replay
				// (stored before) is an answer, and batch_refused decides
				// nothing about its item, which a later batch may make.
				switch p := results[i].Problem; {
				case p == nil && !results[i].Replayed:
					return r
				case p != nil && p.Code == engine.CodeBatchRefused:
					results[i].Decided = false
				}
			}
		}
		r.Items, r.Refused, r.Decided = results, refused, true
	case api.MediaProblem:
		if p := problemOf(reply.Body); p != nil {
			r.Problem, r.Decided = p, decides(reply.Status, p.Code)
		}
	}
	return r
}

// classifyItem classifies one item's result as the answer to its single
// reservation: an answer, or else a problem.
func classifyItem(it BatchItem, res api.BatchResult) Result {
	op := Reserving(it.Request)
	item := Reply{Status: res.Status, ContentType: api.MediaJSON, Replayed: res.Replayed, Body: res.Body}
	if r := Classify(op, item); r.Decided {
		return r
	}
	item.ContentType = api.MediaProblem
	return Classify(op, item)
}
