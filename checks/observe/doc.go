// Package observe reads, once per run, the host facts several checks share: the module list
// (/proc/modules), the kernel build configuration, the interrupt table, each PCI function's AER
// counters and each netdev's attributes. Each is a checks.Fact declared here; every user names
// it, so that all the checks of a run judge the same reading and the report's inventory takes
// what the checks read instead of reading the host again. Every read goes through env.Host, so
// `rdmadiag record` keeps what these facts read.
package observe
