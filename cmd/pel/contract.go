package main

import (
	"errors"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/workload"
)

func init() { subcommands = append(subcommands, newContractCmd) }

// contractSubcommands are the contract subcommands other files add.
var contractSubcommands []func(*app) *cobra.Command

func newContractCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "contract",
		Short: "Write or check a workload contract",
		Long: `A workload contract (YAML) says what load pel sends and what counts as an accepted task:
arrival process, weighted task mix, prompt and output lengths, acceptance checks, SLOs,
retries and cost. Its canonical SHA-256 travels with every result.`,
	}
	c.AddCommand(newContractInitCmd(a), newContractCheckCmd(a))
	for _, sub := range contractSubcommands {
		c.AddCommand(sub(a))
	}
	return c
}

func newContractInitCmd(a *app) *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented example contract (to stdout with no FILE or -)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-" {
				_, err := a.stdout.Write(contract.Example())
				return err
			}
			path := args[0]
			err := rundir.WriteFilePerm(path, force, 0o644, func(w io.Writer) error {
				_, err := w.Write(contract.Example())
				return err
			})
			switch {
			case errors.Is(err, rundir.ErrExists):
				return usageErrorf("%s exists (use --force to overwrite it)", path)
			case errors.Is(err, rundir.ErrSymlink) || errors.Is(err, rundir.ErrNotRegular) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission):
				return usageError(err)
			case err != nil:
				return failError(err)
			}
			return failError(report.ContractWritten(a.stdout, path))
		},
	}
	c.Flags().BoolVar(&force, "force", false, "overwrite FILE if it exists")
	return c
}

func newContractCheckCmd(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a contract and print its identity (sha256) and a summary",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := contract.Load(args[0])
			if err != nil {
				return usageError(err)
			}
			// Planning the workload reads the dataset and replay files the contract names, so
			// a broken line there is caught here rather than at the start of a run.
			if _, err := workload.New(k, workload.Options{}); err != nil {
				return usageErrorf("contract %s: %v", args[0], err)
			}
			if asJSON {
				return report.ContractJSON(a.stdout, k)
			}
			return report.ContractText(a.stdout, k, args[0])
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print name, version, sha256 and the canonical contract as JSON")
	return c
}
