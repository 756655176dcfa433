package report

import (
	_ "embed"
	"sort"
	"strings"
)

// Verdicts are every value Summary.Verdict takes.
var Verdicts = []string{"healthy", "warning", "unknown", "critical", "interrupted"}

// RootCauses are the problems no other finding explains, each an independent fault, in the one
// order every output names them: gravest first as the verdict ranks them (critical, then could
// not check, then warning), a cause as grave as the gravest finding it explains (the warning
// behind a critical consequence decides a critical verdict), then in the troubleshooting order
// of layers (Layers), then by subject and check.
func (r *Report) RootCauses() []*Finding { return RootCauses(r.Findings) }

// gravity ranks the problem severities as the verdict does: a host with a critical finding is
// critical, one that could not be checked is unknown before it has warnings.
func gravity(s Severity) int {
	switch s {
	case Critical:
		return 3
	case Unknown:
		return 2
	case Warning:
		return 1
	}
	return 0
}

func RootCauses(fs []Finding) []*Finding {
	var roots []*Finding
	for i := range fs {
		if f := &fs[i]; f.Severity.Problem() && len(f.ExplainedBy) == 0 {
			roots = append(roots, f)
		}
	}
	if len(roots) == 0 {
		return nil
	}
	// explains[ref] are the findings that name ref as a cause.
	explains := map[string][]int{}
	for i := range fs {
		for _, c := range fs[i].ExplainedBy {
			explains[c] = append(explains[c], i)
		}
	}
	grave := make(map[*Finding]int, len(roots))
	for _, f := range roots {
		g := gravity(f.Severity)
		seen := map[string]bool{f.Ref: true}
		stack := []string{f.Ref}
		for len(stack) > 0 {
			ref := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, i := range explains[ref] {
				g = max(g, gravity(fs[i].Severity))
				if !seen[fs[i].Ref] {
					seen[fs[i].Ref] = true
					stack = append(stack, fs[i].Ref)
				}
			}
		}
		grave[f] = g
	}
	sort.SliceStable(roots, func(i, j int) bool {
		a, b := roots[i], roots[j]
		if grave[a] != grave[b] {
			return grave[a] > grave[b]
		}
		if ra, rb := LayerRank(layerOf(a)), LayerRank(layerOf(b)); ra != rb {
			return ra < rb
		}
		if a.Subject.Name != b.Subject.Name {
			return NaturalLess(a.Subject.Name, b.Subject.Name)
		}
		return a.CheckID < b.CheckID
	})
	return roots
}

// CheckOutcomes gives each check that ran, in order of first finding, its outcome: Critical,
// Warning, Unknown, Skipped, or OK for passed.
func CheckOutcomes(fs []Finding) ([]string, map[string]Severity) {
	worst := map[string]Severity{}
	skipped := map[string]bool{}
	var order []string
	for _, f := range fs {
		w, seen := worst[f.CheckID]
		if !seen {
			order = append(order, f.CheckID)
		}
		if !seen || f.Severity > w {
			worst[f.CheckID] = f.Severity
		}
		if f.Severity == Skipped {
			skipped[f.CheckID] = true
		}
	}
	for id, w := range worst {
		switch {
		case w.Problem():
		case skipped[id]:
			worst[id] = Skipped
		default:
			worst[id] = OK
		}
	}
	return order, worst
}

// NaturalLess orders subject names as every output does: "mlx5_2" before "mlx5_10" and "1" before "10".
func NaturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			na, ra := leadingNumber(a)
			nb, rb := leadingNumber(b)
			if na != nb {
				return na < nb
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingNumber(s string) (uint64, string) {
	var n uint64
	i := 0
	for i < len(s) && isDigit(s[i]) && i < 18 {
		n = n*10 + uint64(s[i]-'0')
		i++
	}
	return n, s[i:]
}

// FaultRow is one row of the fault table as a report carries it: the component that fails, what
// it does, how the failure shows, and the kernel log signatures (ids of rdmadiag's signature
// table, docs/kernel-log.md) that this report's findings of the row were drawn from. Explains is written
// in the document's published form ("fault:<id>", "check:<glob>"); the engine links from the
// typed form the table is decoded into (FaultTable.Explains).
type FaultRow struct {
	ID        string `json:"id"`
	Layer     string `json:"layer"`
	Component string `json:"component"`
	Function  string `json:"function"`
	Symptom   string `json:"symptom"`
	// Action is the row's action (schema 1.4): what its warning and critical findings carry
	// unless their check knew better.
	Action        Action   `json:"action"`
	LogSignatures []string `json:"log_signatures"`
	Explains      []string `json:"explains"`
}

// Layers in troubleshooting order: hardware first, then firmware, driver and kernel modules, the
// port, and the verbs objects that live on top.
var Layers = []string{"pcie", "firmware", "driver", "port", "qp", "cq"}

// SiteLayer is the layer of a site's own check that names none of Layers (an executable plugin
// without a header placing it): what the site judges on top of the stack, ranked after cq.
const SiteLayer = "site"

// LayerRank is the position of a layer in Layers (SiteLayer after them), -1 if unknown.
func LayerRank(layer string) int {
	if layer == SiteLayer {
		return len(Layers)
	}
	for i, l := range Layers {
		if l == layer {
			return i
		}
	}
	return -1
}

//go:embed schema.json
var schemaJSON []byte

// Schema returns the JSON Schema of the report document (report/schema.json).
func Schema() []byte { return append([]byte(nil), schemaJSON...) }

//go:embed list-schema.json
var listSchemaJSON []byte

// ListSchema returns the JSON Schema of `rdmadiag list --format json` (report/list-schema.json).
func ListSchema() []byte { return append([]byte(nil), listSchemaJSON...) }

// layerOf is a finding's layer: its own, else its check id's (a site plugin's id, plugin.<name>,
// does not name its layer).
func layerOf(f *Finding) string {
	if f.Layer != "" {
		return f.Layer
	}
	return LayerOf(f.CheckID)
}

// LayerOf returns the layer name of a check id ("pcie.link" -> "pcie").
func LayerOf(checkID string) string {
	if i := strings.IndexByte(checkID, '.'); i > 0 {
		return checkID[:i]
	}
	return checkID
}
