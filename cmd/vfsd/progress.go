package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/vfsd/vfsd/api"
)

// progressFlag is --progress: show import progress on stderr; by default
// when stderr is a terminal.
type progressFlag struct{ on bool }

func (pf *progressFlag) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&pf.on, "progress", false, "show progress on stderr (default: when stderr is a terminal)")
}

// printer returns the progress callback for cmd, or nil for none.
func (pf *progressFlag) printer(cmd *cobra.Command) *progressPrinter {
	w := cmd.ErrOrStderr()
	if !cmd.Flags().Changed("progress") {
		f, ok := w.(*os.File)
		pf.on = ok && isTerminal(f)
	}
	if !pf.on {
		return nil
	}
	return &progressPrinter{w: w}
}

// progressPrinter redraws one status line as an import goes.
type progressPrinter struct {
	w       io.Writer
	printed bool
}

func (p *progressPrinter) show(pr api.Progress) {
	p.printed = true
	switch pr.Phase {
	case "scan":
		fmt.Fprintf(p.w, "\rscanning: %d files, %s      ", pr.Files, sizeText(pr.Bytes))
		return
	case "seal":
		fmt.Fprintf(p.w, "\rsealing written files: %d/%d files, %s/%s      ", pr.Files, pr.FilesTotal, sizeText(pr.Bytes), sizeText(pr.BytesTotal))
		return
	}
	fmt.Fprintf(p.w, "\rimporting: %d/%d files, %s/%s      ", pr.Files, pr.FilesTotal, sizeText(pr.Bytes), sizeText(pr.BytesTotal))
}

// done ends the status line.
func (p *progressPrinter) done() {
	if p.printed {
		fmt.Fprintln(p.w)
	}
}
