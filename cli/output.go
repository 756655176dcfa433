package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/rdmadiag/rdmadiag/report"
)

// checkOutputPath refuses, before anything is read, an --output that can never be written: its
// directory missing or not a directory, or the path itself a directory.
func checkOutputPath(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return usageErr("--output %s: directory %s: %v", path, dir, errors.Unwrap(err))
	case !st.IsDir():
		return usageErr("--output %s: %s is not a directory", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usageErr("--output %s: is a directory; name a file in it", path)
	}
	return nil
}

// writeFileAtomic replaces path with data (replaceFile).
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	return replaceFile(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// replaceFile is how rdmadiag writes every file it is asked to (-o, the node_exporter
// textfile, record's snapshot): what write writes goes to a temporary file in path's directory
// (a rename is atomic only within one file system), is synced, and is renamed over path. A
// reader (node_exporter scraping the textfile directory) sees the old file or the new one, never
// a part; a link at path is replaced, never written through (rename(2) acts on the name); a
// failed write leaves the old file as it was and no temporary file. The temporary name ends in
// ".tmp", so the textfile collector, which reads "*.prom", never picks it up.
func replaceFile(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err = write(tmp); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; readers such as node_exporter run as another user.
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The rename itself is durable once the directory is synced; a failure here leaves a
	// complete file, so it is not reported.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// outputFlags are --format/-f and --output/-o, with the same meaning on every command that has
// them: -o names the file written, -f the format.
type outputFlags struct {
	format, output string
	formats        []string
}

func (o *outputFlags) register(c *cobra.Command, def string, formats []string, formatHelp, outputHelp string) {
	o.formats = formats
	c.Flags().StringVarP(&o.format, "format", "f", def, formatHelp)
	c.Flags().StringVarP(&o.output, "output", "o", "", outputHelp)
	completeValues(c, "format", formats)
}

// resolve reads -o as the format it meant before -o named the output file of every command
// (check, demo and fleet took -o for --format): a bare format name given to -o without --format
// is still taken as the format, with a warning on stderr. A file of that name is written with
// -o ./NAME. It also records that errors should be JSON when the format is json.
func (o *outputFlags) resolve(a *App, c *cobra.Command) {
	if o.output != "" && !c.Flags().Changed("format") && slices.Contains(o.formats, o.output) {
		fmt.Fprintf(a.Stderr, "rdmadiag: -o %s is read as --format %s; -o now names the output file: write --format %s (or -o ./%s for a file of that name)\n",
			o.output, o.output, o.output, o.output)
		o.format, o.output = o.output, ""
	}
	a.jsonErrors = o.format == "json"
}

// write puts data into the --output file (atomically) or on stdout.
func (o *outputFlags) write(a *App, data []byte) error {
	if o.output == "" || o.output == "-" {
		_, err := a.Stdout.Write(data)
		return err
	}
	if err := writeFileAtomic(o.output, data, 0o644); err != nil {
		return &exitError{code: report.ExitUnknown, err: fmt.Errorf("--output: %w", err)}
	}
	return nil
}
