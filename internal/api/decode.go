package api

import (
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/strictjson"
)

// DecodeStrict decodes body with strictjson.Decode, the one strict decoder,
// and returns its refusal as a CodeRequestContract error with the same
// message.
func DecodeStrict(body []byte, members []strictjson.Member) error {
	if err := strictjson.Decode(body, members); err != nil {
		return engine.Errorf(engine.CodeRequestContract, "%s", err)
	}
	return nil
}
