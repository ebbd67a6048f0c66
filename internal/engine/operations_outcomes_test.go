package engine

import (
	"slices"
	"testing"
)

// TestOperationOutcomesAreEveryStatus: the operations view filters by
// every status some kind of operation answers with, and only by those.
func TestOperationOutcomesAreEveryStatus(t *testing.T) {
	var want []string
	for _, statuses := range answerStatuses {
		for _, s := range statuses {
			if !slices.Contains(want, s) {
				want = append(want, s)
			}
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(OperationOutcomes))
	if !slices.Equal(got, want) {
		t.Errorf("OperationOutcomes = %v, the statuses of answers are %v", got, want)
	}
}
