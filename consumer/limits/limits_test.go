package limits

import "testing"

func TestMaxConcurrency(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name       string
		container  int64
		maxMessage int64
		requested  int
		want       int
	}{
		{"small messages keep the requested concurrency", 512 * mib, 64 << 10, 80, 80},
		{"maximum-size messages bound a 512 MiB instance", 512 * mib, MaxMessageBytes, 80, 7},
		{"more memory fits more", 2048 * mib, MaxMessageBytes, 80, 34},
		{"too small for one message", 32 * mib, MaxMessageBytes, 80, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaxConcurrency(tt.container, tt.maxMessage, tt.requested); got != tt.want {
				t.Errorf("MaxConcurrency(%d, %d, %d) = %d, want %d", tt.container, tt.maxMessage, tt.requested, got, tt.want)
			}
		})
	}
}

func TestMaxPushBodyCoversBase64(t *testing.T) {
	// 10,000,000 bytes of data are 13,333,336 bytes of base64.
	if got := MaxPushBodyBytes(MaxMessageBytes); got < 13_333_336 {
		t.Fatalf("MaxPushBodyBytes(%d) = %d, below the base64 length 13,333,336", MaxMessageBytes, got)
	}
}

// TestMaxConcurrencyFillsTheBudget holds, for every container size Cloud
// Run offers (128 MiB to 32 GiB in 128 MiB steps) and message sizes from 1
// KB to the largest, that the derived concurrency's deliveries fit in the
// delivery budget of the container's GOMEMLIMIT and one more would not
// (unless the requested concurrency is the bound), so the push handler's
// admission (limits.PushDoor().Bytes within limits.DeliveryBudget) admits
// exactly what the component sized the instance for.
func TestMaxConcurrencyFillsTheBudget(t *testing.T) {
	for mib := int64(128); mib <= 32<<10; mib += 128 {
		for msg := int64(1000); msg <= MaxMessageBytes; msg *= 10 {
			const requested = 1000
			c := int64(MaxConcurrency(mib<<20, msg, requested))
			budget := DeliveryBudget(MemoryLimit(mib << 20))
			if c*PerMessageBytes(msg) > budget {
				t.Fatalf("%d MiB, %d-byte messages: %d deliveries take %d bytes, over the budget %d", mib, msg, c, c*PerMessageBytes(msg), budget)
			}
			if c < requested && (c+1)*PerMessageBytes(msg) <= budget {
				t.Fatalf("%d MiB, %d-byte messages: concurrency %d, but %d fit in the budget %d", mib, msg, c, c+1, budget)
			}
		}
	}
}
