package report

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Output is one destination of a report: a format and the file it goes to, or standard
// output when Path is empty.
type Output struct {
	Format Format
	Path   string
}

// ParseOutputs reads output specifications, each "FORMAT" (standard output) or
// "FORMAT=FILE", so one evaluation can be written in several formats. At most one goes to
// standard output, and no file twice.
func ParseOutputs(specs []string) ([]Output, error) {
	outs := make([]Output, 0, len(specs))
	files := map[string]bool{}
	toStdout := ""
	for _, spec := range specs {
		name, path, toFile := strings.Cut(spec, "=")
		o := Output{Format: Format(name), Path: path}
		if !slices.Contains(Formats(), o.Format) {
			return nil, fmt.Errorf("%q: unknown format %q; use FORMAT or FORMAT=FILE with FORMAT one of %s", spec, name, formatList())
		}
		switch {
		case toFile && path == "":
			return nil, fmt.Errorf("%q: no file after \"=\"; give a path, or just %q for standard output", spec, name)
		case toFile && files[path]:
			return nil, fmt.Errorf("%q: %s is already written by another output", spec, path)
		case toFile:
			files[path] = true
		case toStdout != "":
			return nil, fmt.Errorf("%q: standard output already gets %q; send all but one format to files with FORMAT=FILE", spec, toStdout)
		default:
			toStdout = spec
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// WriteOutputs writes r to every output: to stdout, or to a file it creates or truncates.
func WriteOutputs(stdout io.Writer, outs []Output, r *Report) error {
	for _, o := range outs {
		if o.Path == "" {
			if err := Write(stdout, o.Format, r); err != nil {
				return fmt.Errorf("writing the %s report: %w", o.Format, err)
			}
			continue
		}
		if err := writeFile(o, r); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(o Output, r *Report) error {
	f, err := os.Create(o.Path)
	if err != nil {
		return fmt.Errorf("writing the %s report: %w", o.Format, err)
	}
	if err := Write(f, o.Format, r); err != nil {
		f.Close()
		return fmt.Errorf("writing the %s report to %s: %w", o.Format, o.Path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the %s report to %s: %w", o.Format, o.Path, err)
	}
	return nil
}

// formatList is the format names, comma-separated.
func formatList() string {
	names := make([]string, len(Formats()))
	for i, f := range Formats() {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}
