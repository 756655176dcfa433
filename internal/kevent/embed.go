package kevent

import _ "embed"

// The table is data: one file per driver family, each entry a driver's own format string with
// where it is printed and what it means (the format in docs/kernel-log.md). Each file is embedded
// as a string, not through an embed.FS, whose ReadFile copies: the table keeps pointing into the
// binary's own read-only data instead of a copy on the heap. TestEmbeddedFiles holds this list
// to the directory.

//go:embed signatures/consumers-scan.json
var sigConsumersScan string

//go:embed signatures/consumers.json
var sigConsumers string

//go:embed signatures/core.json
var sigCore string

//go:embed signatures/mlx-scan.json
var sigMlxScan string

//go:embed signatures/mlx.json
var sigMlx string

//go:embed signatures/pcie-scan.json
var sigPcieScan string

//go:embed signatures/pcie.json
var sigPcie string

//go:embed signatures/vendors-scan.json
var sigVendorsScan string

//go:embed signatures/vendors.json
var sigVendors string

// embedded is the table files compiled into the binary.
func embedded() []tableText {
	return []tableText{
		{"consumers-scan.json", sigConsumersScan},
		{"consumers.json", sigConsumers},
		{"core.json", sigCore},
		{"mlx-scan.json", sigMlxScan},
		{"mlx.json", sigMlx},
		{"pcie-scan.json", sigPcieScan},
		{"pcie.json", sigPcie},
		{"vendors-scan.json", sigVendorsScan},
		{"vendors.json", sigVendors},
	}
}
