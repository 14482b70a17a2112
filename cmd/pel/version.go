package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/version"
)

func init() { subcommands = append(subcommands, newVersionCmd) }

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pel's version, the commit it was built from, and the evidence schema it writes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in := version.Read()
			fmt.Fprintf(a.stdout, "pel %s\n", in)
			if in.Time != "" {
				fmt.Fprintf(a.stdout, "commit time: %s\n", in.Time)
			}
			if in.Go != "" {
				fmt.Fprintf(a.stdout, "built with:  %s\n", in.Go)
			}
			fmt.Fprintf(a.stdout, "evidence.json schema: %d\n", evidence.SchemaVersion)
			return nil
		},
	}
}
