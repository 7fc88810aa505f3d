package components

import (
	"net/netip"
	"strconv"
	"testing"
)

// FuzzStoreAddress: for any IPv4 address and port, in each way a
// PostgreSQL URL names its host, the store counts as private exactly when
// the address is in 10/8, 172.16/12 or 192.168/16 (decided here from its
// bits), and a per-instance or Cloud SQL store is never taken for one.
func FuzzStoreAddress(f *testing.F) {
	for _, seed := range [][5]byte{{10, 0, 0, 5, 0}, {172, 15, 255, 255, 1}, {172, 16, 0, 0, 2}, {172, 31, 255, 255, 0}, {172, 32, 0, 0, 1},
		{192, 168, 0, 1, 2}, {192, 169, 0, 0, 0}, {8, 8, 8, 8, 1}, {11, 0, 0, 0, 2}} {
		f.Add(seed[0], seed[1], seed[2], seed[3], uint16(5432), seed[4])
	}
	f.Fuzz(func(t *testing.T, a, b, c, d byte, port uint16, form byte) {
		ip := netip.AddrFrom4([4]byte{a, b, c, d}).String()
		var url string
		switch form % 3 {
		case 0:
			url = "postgres://app@" + ip + "/orders"
		case 1:
			url = "postgresql://app:pw@" + ip + ":" + strconv.Itoa(int(port)) + "/orders?sslmode=require"
		default:
			url = "postgres:///orders?host=" + ip
		}
		want := a == 10 || a == 172 && b&0xf0 == 16 || a == 192 && b == 168
		n := needsOf(url)
		if got := len(n.private) > 0; got != want || n.perInstance || n.cloudSQL != "" {
			t.Fatalf("%s: %+v, want private %v", url, n, want)
		}
		if needsOf("postgres://app@/orders?host=/cloudsql/p-123456:europe-west1:"+ip).private != nil {
			t.Fatalf("a Cloud SQL socket counted as a private address")
		}
	})
}
