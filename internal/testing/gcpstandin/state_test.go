package gcpstandin

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// TestStateReadersNeverSeeAPartialWrite: the provider processes of one deployment share
// the state folder; a call that changes it holds the lock (locked), and an invoke
// (getProject) reads it without. For any sequence of writes of any size (a seeded
// generator), a reader without the lock reads a whole state every time: the one before
// a write or the one after, never a truncated file. Before the state was written whole
// (writeWhole), a shipped stack's getProject failed with "unexpected end of JSON input"
// when the engine ran its steps close enough together (issue 38).
func TestStateReadersNeverSeeAPartialWrite(t *testing.T) {
	s := &standin{dir: t.TempDir()}
	rng := rand.New(rand.NewPCG(38, 1))
	const writes = 100
	sizes := make([]int, writes)
	for i := range sizes {
		sizes[i] = rng.IntN(200) // resources in the state after write i
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				st, err := readAll(s.dir)
				if err != nil {
					errs <- err
					return
				}
				// A whole state is one of the generator's: resources r0…r(n-1).
				for k := range st {
					if _, ok := st["r0"]; !ok || !strings.HasPrefix(k, "r") {
						errs <- fmt.Errorf("state with %d resources lacks r0 or holds %q", len(st), k)
						return
					}
				}
			}
		}()
	}
	for _, n := range sizes {
		err := s.locked(func(st map[string]Record) error {
			clear(st)
			for j := range n {
				st[fmt.Sprintf("r%d", j)] = Record{Type: "gcp:pubsub/topic:Topic", Name: strings.Repeat("t", j%50), State: map[string]any{"labels": map[string]any{"n": j}}}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a reader without the lock: %v", err)
	}
}
