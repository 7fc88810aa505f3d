package server

import (
	"net"
	"net/http"
	"sync"
)

// MaxIdleConns bounds the keep-alive connections left open between
// requests: a connection that goes idle beyond it is closed at once (its
// client opens another when it has a request). Each idle connection holds
// a goroutine and its read and write buffers, so an unbounded number of
// idle clients would hold memory without a request to show for it.
const MaxIdleConns = 256

// conns tracks the server's connections by state (http.Server.ConnState):
// it closes idle connections beyond a bound and counts the active ones,
// whose requests a shutdown cuts short.
type conns struct {
	maxIdle int
	mu      sync.Mutex
	idle    map[net.Conn]struct{}
	active  map[net.Conn]struct{}
}

func newConns(maxIdle int) *conns {
	return &conns{maxIdle: maxIdle, idle: map[net.Conn]struct{}{}, active: map[net.Conn]struct{}{}}
}

// track is the http.Server's ConnState hook.
func (c *conns) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.idle, conn)
	delete(c.active, conn)
	switch state {
	case http.StateActive:
		c.active[conn] = struct{}{}
	case http.StateIdle:
		if len(c.idle) >= c.maxIdle {
			_ = conn.Close()
			return
		}
		c.idle[conn] = struct{}{}
	}
}

// activeCount is the number of connections with a request in progress.
func (c *conns) activeCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.active)
}
