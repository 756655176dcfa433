package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Build is the binary's build stamps, which its main package holds (set by the Makefile with
// -ldflags "-X main.version=... -X main.commit=... -X main.date=..."). A binary built without them
// (go install, go build) falls back to what the Go toolchain recorded; see stamps.
type Build struct {
	// Version is "dev" or empty when not stamped.
	Version, Commit, Date string
}

// stamps returns the version, commit and build date of this binary: the -ldflags stamps where
// set, otherwise the module version (`go install module@version`) and VCS revision the Go
// toolchain records in the binary (a build inside a git checkout with -buildvcs on). The build
// date is never guessed: the VCS time is the commit's, not the build's.
func stamps(version, commit, date string, info func() (*debug.BuildInfo, bool)) (string, string, string) {
	bi, ok := info()
	if !ok || bi == nil {
		return version, commit, date
	}
	if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	if commit == "" {
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if commit != "" && modified {
			commit += "-dirty"
		}
	}
	return version, commit, date
}

// versionInfo is what `rdmadiag version` prints. Every key is always present in the JSON form
// ("" when the binary does not know it), so a script can read it without probing for keys.
type versionInfo struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"build_date"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

func (a *App) versionInfo() versionInfo {
	return versionInfo{Name: "rdmadiag", Version: a.Version, Commit: a.Commit, BuildDate: a.BuildDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

func (a *App) versionCmd() *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date and Go version of this binary",
		Long: "Print the version, the commit it was built from, the build date and the Go toolchain and platform.\n" +
			"A value the binary does not know (built without the Makefile's stamps) is \"unknown\" in the\n" +
			"table and \"\" in JSON. `rdmadiag --version` prints the version alone.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := a.versionInfo()
			switch format {
			case "table", "text":
				orUnknown := func(s string) string {
					if s == "" {
						return "unknown"
					}
					return s
				}
				fmt.Fprintf(a.Stdout, "rdmadiag %s\ncommit:     %s\nbuild date: %s\ngo:         %s %s\n",
					v.Version, orUnknown(v.Commit), orUnknown(v.BuildDate), v.GoVersion, v.Platform)
			case "json":
				b, err := json.MarshalIndent(v, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(a.Stdout, "%s\n", b)
			default:
				return usageErr("--format %q: want table or json", format)
			}
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "table", "output format: table or json")
	completeValues(c, "format", []string{"table", "json"})
	return c
}
