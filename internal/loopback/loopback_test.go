package loopback

import "testing"

func TestIsHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:1234": true, "localhost": true, "LOCALHOST:80": true,
		"[::1]": true, "[::1]:1234": true,
		"evil.example": false, "evil.example:1234": false, "127.0.0.1.evil.example": false,
		"10.0.0.1": false, "127.0.0.2": false, "": false, "localhost:": false, "localhost:x": false,
		"[::2]:1": false, "0.0.0.0": false,
	} {
		if got := IsHost(host); got != want {
			t.Errorf("IsHost(%q) = %v; want %v", host, got, want)
		}
	}
}
