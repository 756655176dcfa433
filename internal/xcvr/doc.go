// Package xcvr decodes and judges the management memory (EEPROM) of pluggable transceivers
// and cables, as the kernel's ethtool netlink MODULE_EEPROM_GET returns it page by page:
//
//   - SFF-8636 (QSFP+, QSFP28, QSFP56 with SFF-8024 identifiers 0Ch, 0Dh, 11h),
//     SNIA SFF-8636 Rev 2.10a "Management Interface for 4-lane Modules and Cables";
//   - CMIS (QSFP-DD 18h, OSFP 19h, QSFP+ with CMIS 1Eh, and DSFP, SFP-DD and SFP+ modules
//     declaring CMIS; revisions 4.0 and 5.x),
//     OIF-CMIS-05.2 "Common Management Interface Specification";
//   - SFF-8472 (SFP/SFP+/SFP28, identifier 03h; addresses A0h and A2h, i2c 0x50 and 0x51),
//     SNIA SFF-8472 Rev 12.4 "Management Interface for SFP+".
//
// Identifier, connector and media codes come from SNIA SFF-8024 Rev 4.x (Table 4-1 identifiers,
// Table 4-3 connector types). Every offset used is cited next to the code that reads it; the
// Linux ethtool userspace (qsfp.h, cmis.h, cmis.c in
// git.kernel.org/pub/scm/network/ethtool/ethtool.git) names the same offsets and was used to
// check them.
//
// Read fetches only the pages the specification and the module's own advertisement say exist,
// and degrades (marks a part unavailable) when an optional page cannot be read. Judge compares
// each monitor with the module's own alarm and warning thresholds and turns latched flags into
// verdicts; it never invents a threshold.
package xcvr
