package report

// Inventory describes the RDMA devices of the analysed host in typed fields, so that a program
// comparing many reports (rdmadiag fleet, a CMDB import) never parses summary text. It is
// descriptive: values are as the host printed them, and a value that could not be read is
// left out (the findings say why).
type Inventory struct {
	Devices []InventoryDevice `json:"devices"`
}

// InventoryDevice is one RDMA device.
type InventoryDevice struct {
	Name     string `json:"name"`
	NodeType string `json:"node_type,omitempty"`
	// PCI is the function's address; empty for software devices (rxe, siw), which have Parent.
	PCI string `json:"pci,omitempty"`
	// PF is the physical function of a virtual function.
	PF string `json:"pf,omitempty"`
	// VendorID and DeviceID are as sysfs prints them ("0x15b3", "0x101b").
	VendorID string `json:"vendor_id,omitempty"`
	DeviceID string `json:"device_id,omitempty"`
	// NUMANode is the function's numa_node; -1 when the platform does not say.
	NUMANode *int   `json:"numa_node,omitempty"`
	HCAType  string `json:"hca_type,omitempty"`
	// FirmwareVersion is fw_ver; BoardID is board_id (the PSID on NVIDIA cards).
	FirmwareVersion string `json:"firmware_version,omitempty"`
	BoardID         string `json:"board_id,omitempty"`
	Driver          string `json:"driver,omitempty"`
	// DriverVersion is /sys/module/<driver>/version, which only drivers that declare a version
	// (MLNX_OFED, DOCA-OFED) have.
	DriverVersion string          `json:"driver_version,omitempty"`
	NodeGUID      string          `json:"node_guid,omitempty"`
	Parent        string          `json:"parent,omitempty"`
	Ports         []InventoryPort `json:"ports"`
}

// InventoryPort is one port of a device.
type InventoryPort struct {
	Port      int    `json:"port"`
	State     string `json:"state,omitempty"`
	PhysState string `json:"phys_state,omitempty"`
	LinkLayer string `json:"link_layer,omitempty"`
	// RateGbps is the number in Rate, the kernel's text ("200 Gb/sec (4X HDR)"); Width ("4X")
	// and Speed ("HDR") are its parts when the kernel prints them.
	RateGbps *float64 `json:"rate_gbps,omitempty"`
	Rate     string   `json:"rate,omitempty"`
	Width    string   `json:"width,omitempty"`
	Speed    string   `json:"speed,omitempty"`
	// LID and SMLID are the port's and its subnet manager's LIDs (InfiniBand only).
	LID   *uint32 `json:"lid,omitempty"`
	SMLID *uint32 `json:"sm_lid,omitempty"`
	// Netdevs are the network interfaces bound to the port (RoCE); NetdevMTU is the first one's
	// MTU, from which RoCE drivers derive the port's active MTU.
	Netdevs   []string `json:"netdevs,omitempty"`
	NetdevMTU int      `json:"netdev_mtu,omitempty"`
	// GID is the port's routable RoCE address (Ethernet link layer only, since 1.3): the lowest
	// GID table index carrying an IP address, RoCE v2 preferred.
	GID *InventoryGID `json:"gid,omitempty"`
	// ErrorCounters are the PMA error counters since boot (counters/<name>) that could be read.
	ErrorCounters map[string]uint64 `json:"error_counters,omitempty"`
}

// InventoryGID is one GID table entry of a port.
type InventoryGID struct {
	Index int `json:"index"`
	// GID is as the kernel prints it (eight groups of four hex digits).
	GID string `json:"gid"`
	// Type is "RoCE v2" or "IB/RoCE v1".
	Type string `json:"type,omitempty"`
}
