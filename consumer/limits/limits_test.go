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
		{"maximum-size messages bound a 512 MiB instance", 512 * mib, MaxMessageBytes, 80, 15},
		{"more memory fits more", 2048 * mib, MaxMessageBytes, 80, 66},
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
