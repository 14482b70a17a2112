package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/pack"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
)

func init() { subcommands = append(subcommands, newPackCmd) }

func newPackCmd(a *app) *cobra.Command {
	var out string
	var o pack.Options
	c := &cobra.Command{
		Use:   "pack DIR -o FILE.tar.gz",
		Short: "Write a run directory as an evidence package safe to hand over (identifiers pseudonymised)",
		Long: `pack writes the run (or sweep) directory DIR as FILE.tar.gz for another team: every file is
rewritten by a rewriter that knows its format, with host names, IP addresses, ports,
request/trace/span ids, file-system paths, user names, process names, GPU UUIDs and prompt
hashes (unless --keep-prompt-hashes) replaced by pseudonyms, and prompt/output text removed.
A pseudonym is an HMAC-SHA256 under a random key made for this package and never stored:
equal values stay equal across the package's files (records, spans, metrics and evidence
still join) and cannot be reversed. report.html is rendered again from the rewritten
evidence. A file no rewriter knows is left out and listed. Every rewritten file is searched
for every original before anything is written. MANIFEST.json in the archive lists what was
replaced, with counts, never the values. Unpacked, the directory gives the same verdict
under pel analyze.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf("pack: give -o FILE.tar.gz")
			}
			o.Context = a.ctx
			res, err := pack.Pack(args[0], out, o)
			if err != nil {
				if errors.Is(err, pack.ErrBadInput) || errors.Is(err, rundir.ErrExists) || errors.Is(err, rundir.ErrSymlink) || errors.Is(err, rundir.ErrNotRegular) {
					return usageError(err)
				}
				return failError(err)
			}
			return failError(report.Packed(a.stdout, out, len(res.Manifest.Files), res.Manifest.Values, res.LeftOutNames))
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "the package to write (FILE.tar.gz; an existing file is replaced only with --force)")
	c.Flags().BoolVar(&o.KeepPromptHashes, "keep-prompt-hashes", false, "keep prompt_sha256 as recorded (another package can then tell whether the same prompts were sent)")
	c.Flags().BoolVar(&o.Force, "force", false, "replace an existing output file")
	return c
}
