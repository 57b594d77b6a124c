// Package loopback holds the one rule of which Host names the service's
// listeners answer: the server's routes and the capture process's OTLP
// receiver both refuse every other name, which stops DNS rebinding.
package loopback

import (
	"net"
	"strings"
)

// IsHost reports whether a Host header names 127.0.0.1, localhost or
// [::1], with or without a port.
func IsHost(host string) bool {
	name := host
	if h, port, err := net.SplitHostPort(host); err == nil {
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		name = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
	}
	switch strings.ToLower(name) {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}
