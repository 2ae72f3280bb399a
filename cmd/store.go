package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/store"
)

func newStoreCmd(f *factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "store",
		Short: "Serve the embedded MongoDB-compatible store on its own",
	}
	c.AddCommand(newStoreServeCmd(f))
	return c
}

type storeServeOptions struct {
	listen string
}

func newStoreServeCmd(f *factory) *cobra.Command {
	opts := &storeServeOptions{}
	c := &cobra.Command{
		Use:   "serve [--listen HOST:PORT]",
		Short: "Serve the embedded store under --data-dir for other processes (replicas in development and CI)",
		Long: "Serve the embedded store under --data-dir on --listen until interrupted, as a MongoDB-compatible\n" +
			"server that several `app serve` replicas may share (--mongodb-uri): every single-document write is\n" +
			"atomic for every client. Prints the store's URI. For development and tests; production replicas\n" +
			"use MongoDB.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runStoreServe(cmd.Context(), f, opts) },
	}
	c.Flags().StringVar(&opts.listen, "listen", "127.0.0.1:27017", "the address to serve the store on")
	return c
}

func runStoreServe(ctx context.Context, f *factory, opts *storeServeOptions) error {
	// Checked as addr is, with the configuration: before the store starts.
	if err := config.CheckAddr(opts.listen); err != nil {
		return &config.Error{Key: "--listen", Value: opts.listen, Reason: err.Error() + ", e.g. 127.0.0.1:27017"}
	}
	ctx, stop := f.interruptible(ctx) // a signal while it waits for the data dir is an interruption
	defer stop()
	st, err := store.Open(ctx, store.Options{DataDir: f.cfg.DataDir, Listen: opts.listen, Standalone: true, Logger: f.log})
	if err != nil {
		return err
	}
	fmt.Fprintln(f.out, st.URI())
	<-ctx.Done()
	return st.Close(context.Background())
}
