// Package localpubsub starts Google's in-process Pub/Sub fake (pstest) and
// connects a real v2 client to it over gRPC on loopback, for tests and for the
// local pipeline.
package localpubsub

import (
	"context"
	"fmt"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Fake is a running pstest server with a client connected to it.
type Fake struct {
	Server *pstest.Server
	Client *pubsub.Client
}

// Start starts a pstest server (with optional reactors, e.g. to rewrite
// requests) and a client for project. Close releases both.
func Start(ctx context.Context, project string, opts ...pstest.ServerReactorOption) (*Fake, error) {
	return StartWith(ctx, project, func(*grpc.Server) {}, opts...)
}

// StartWith is Start with more gRPC services served beside pstest's on the same
// address: register adds them (pstest serves Pub/Sub's publisher, subscriber and
// schema services, not the IAM policy service the Pub/Sub endpoint also serves).
func StartWith(ctx context.Context, project string, register func(*grpc.Server), opts ...pstest.ServerReactorOption) (*Fake, error) {
	srv := pstest.NewServerWithCallback(0, register, opts...)
	client, err := pubsub.NewClient(ctx, project,
		option.WithEndpoint(srv.Addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	)
	if err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("localpubsub: connect client to pstest at %s: %w", srv.Addr, err)
	}
	return &Fake{Server: srv, Client: client}, nil
}

// Close closes the client, then the server.
func (f *Fake) Close() error {
	cerr := f.Client.Close()
	serr := f.Server.Close()
	if cerr != nil {
		return fmt.Errorf("localpubsub: close client: %w", cerr)
	}
	if serr != nil {
		return fmt.Errorf("localpubsub: close server: %w", serr)
	}
	return nil
}
