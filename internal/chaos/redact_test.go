package chaos_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/chaos"
)

// TestCampaignDSNHidesThePassword: a RESERVE_PG_DSN the campaign cannot
// use is named in its error without its password.
func TestCampaignDSNHidesThePassword(t *testing.T) {
	_, _, err := chaos.CampaignDSN(context.Background(), "host=db password=s3cr3t-pw")
	if err == nil || strings.Contains(err.Error(), "s3cr3t-pw") || !strings.Contains(err.Error(), "password=xxxxx") {
		t.Errorf("CampaignDSN of a key=value DSN: %v, want an error naming it without its password", err)
	}
}
