package http_test

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	lhttp "github.com/laurel/laurel/http"
)

// fuzzProxies are the proxies FuzzClientIP may trust, each picked by a bit of its input.
var fuzzProxies = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fd00::/8"),
	netip.MustParsePrefix("192.0.2.1/32"),
}

// FuzzClientIP: whatever a client writes in X-Forwarded-For, the address it is counted
// against (per-address rate limits) is a valid address, never the header's text, so a flood
// of invented headers cannot make invented keys; from a peer that is not a trusted proxy the
// header changes nothing; behind trusted proxies it is the nearest hop that is not one, every
// hop nearer than it being a valid trusted address; and a malformed hop ends what is believed.
func FuzzClientIP(f *testing.F) {
	for _, c := range []struct {
		peer, xff string
		trust     uint8
	}{
		{"127.0.0.1:5000", "203.0.113.7", 1},
		{"127.0.0.1:5000", "198.51.100.1, 203.0.113.9", 1},
		{"127.0.0.1:5000", "203.0.113.10\n10.1.2.3", 3},
		{"[::1]:80", "2001:db8::1, fd00::2", 12},
		{"[::ffff:127.0.0.1]:80", "::ffff:10.0.0.1,not an address", 3},
		{"203.0.113.7:1", "10.0.0.1", 31},
		{"127.0.0.1:5000", ",,, ", 1},
		{"127.0.0.1:5000", "192.0.2.1 , 192.0.2.1%eth0", 17},
		{"bad", "10.0.0.1", 1},
	} {
		f.Add(c.peer, c.xff, c.trust)
	}
	f.Fuzz(func(t *testing.T, peer, xff string, trust uint8) {
		var trusted []netip.Prefix
		for i, p := range fuzzProxies {
			if trust&(1<<i) != 0 {
				trusted = append(trusted, p)
			}
		}
		isTrusted := func(a netip.Addr) bool {
			return slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(a) })
		}
		r := &http.Request{RemoteAddr: peer, Header: http.Header{}}
		for h := range strings.SplitSeq(xff, "\n") {
			r.Header.Add("X-Forwarded-For", h)
		}
		got := lhttp.ClientIP(trusted, r)
		ap, err := netip.ParseAddrPort(peer)
		if err != nil {
			if got != peer {
				t.Fatalf("peer %q, not an address and port: counted as %q, want the peer as it is", peer, got)
			}
			return // the server's listener gives only addresses and ports
		}
		addr, err := netip.ParseAddr(got)
		if err != nil || addr.String() != got {
			t.Fatalf("peer %q, X-Forwarded-For %q: counted as %q, not an address in its canonical form", peer, xff, got)
		}
		from := ap.Addr().Unmap()
		if !isTrusted(from) {
			if addr != from {
				t.Fatalf("peer %q, not trusted, X-Forwarded-For %q: counted as %q, want the peer", peer, xff, got)
			}
			return
		}
		// Behind trusted proxies: of the hops nearest the server that are all addresses, the
		// nearest one that is not a trusted proxy; or the farthest, when all are.
		var hops []string
		for _, h := range r.Header.Values("X-Forwarded-For") {
			hops = append(hops, strings.Split(h, ",")...)
		}
		var valid []netip.Addr // from the farthest to the nearest
		for _, h := range hops {
			a, err := netip.ParseAddr(strings.TrimSpace(h))
			if err != nil {
				valid = valid[:0]
				continue
			}
			valid = append(valid, a.Unmap())
		}
		want := from
		if len(valid) > 0 {
			want = valid[0]
		}
		for _, a := range valid {
			if !isTrusted(a) {
				want = a // the last one, the nearest, stays
			}
		}
		if addr != want {
			t.Fatalf("peer %q, X-Forwarded-For %q, trusting %v: counted as %q, want %q", peer, xff, trusted, got, want)
		}
	})
}
