package chaos

import (
	mrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/pgcluster"
)

// TestCICampaignRestartsAndFailsOver checks that the campaign of CI (20
// seeds from 1 at CI size over the default stores) has PostgreSQL runs on
// a cluster of their own, with one daemon and with three, and that every
// such run restarts its primary and fails it over: the cluster faults of
// the phases alternate.
func TestCICampaignRestartsAndFailsOver(t *testing.T) {
	kinds := strings.Split(DefaultStores, ",")
	byDaemons := map[int]int{}
	for s := uint64(1); s <= 20; s++ {
		if store, daemons, cluster := storeOf(kinds, s); cluster {
			if store != "postgres" {
				t.Errorf("seed %d: a cluster for store %s", s, store)
			}
			byDaemons[daemons]++
		}
	}
	if byDaemons[1] == 0 || byDaemons[3] == 0 {
		t.Errorf("seeds 1 to 20 own clusters with one daemon %d times and with three %d times; want both", byDaemons[1], byDaemons[3])
	}
	for first := range 2 {
		r := &run{rng: mrand.New(mrand.NewPCG(1, 2)), cluster: &pgcluster.Cluster{}, clusterFirst: first}
		kinds := map[bool]int{}
		for phase := range CISize.Phases {
			kinds[r.planClusterFault(phase).failover]++
		}
		if kinds[true] == 0 || kinds[false] == 0 {
			t.Errorf("first cluster fault %d: %d failovers and %d restarts in a run at CI size; want both", first, kinds[true], kinds[false])
		}
	}
}
